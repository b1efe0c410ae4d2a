"""A compressor from scratch: stochastic ternary quantization (TernGrad, Wen et al. 2017, without clipping).

C(x)_i = m sign(x_i) b_i with m = max_j |x_j| and b_i ~ Bernoulli(|x_i| / m): unbiased, E[C(x)] = x, and
E||C(x) - x||^2 = sum_i (m |x_i| - x_i^2).  Sent: one 32-bit scale m and a 2-bit symbol (-1, 0, +1) per entry.
Use: `comm: {plugins: [docs/examples/ternary.py]}`, then `{name: ternary}` wherever a registry takes a compressor.
"""

from fedrepro.comm import Compressor, Encoding, register_compressor


@register_compressor("ternary")
class Ternary(Compressor):
    name = "ternary"        # the registered name, also the name the ledger and the figures show
    unbiased = True

    def n_uniforms(self, d):
        return d            # one U[0, 1) draw per entry: the engine's named stream passes them to _encode as u

    def _encode(self, x2, u, elem_shape, **context):
        # x2: the batch as (B, d), numpy or torch (same dtype and device as the caller's); u: (B, d) uniforms
        mag = abs(x2)
        m = mag.amax(1, keepdim=True) if hasattr(mag, "amax") else mag.max(1, keepdims=True)   # torch / numpy
        keep = u * m < mag                                   # P(keep entry i) = |x_i| / m; never where x_i = 0
        value = m * ((x2 > 0) & keep) - m * ((x2 < 0) & keep)   # x2's library and dtype
        d = x2.shape[1]
        # per element of the batch: d ternary symbols of 2 bits and one 32-bit scale
        return Encoding(value, counts={"values": d, "scales": 1}, widths={"values": 2, "scales": 32})
