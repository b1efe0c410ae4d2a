"""Each paper's own communication measure, as a formula and as a reading of a ``BitLedger``.

The ledger holds the exact payload bits (what was measured); the functions below give what each
paper reports, so a figure can show the paper's measure and a claim can cite both.

gcca (Shrestha & Fu, Sec. V-A.3: BPV and CR)
    BPV(r) = q_full + r q (CuteMaxVar), q_full + r q_full (AltMaxVar), q_full = 32: cumulative
    bits per exchanged scalar and per link direction; r = 0 is the full-precision initial round;
    the per-message max-abs scale is ignored.
    CR = 1 - (q R_C) / (q_full R_A), R_C and R_A the 1-based iteration counts at which the two
    methods first meet the same criterion; the initial round and the scale are ignored.
cvfl (docs/comm.md, "4. Ledger and conventions")
    Table-matching cost per epoch (the formula behind every reported number, [C] verified [D]):
    Alg. 1: n_b b (2 B P M² + M |θ0|); ImageNet-100: n_b b (B P M (M+1) + M |θ0|);
    Alg. 2 (Q = 1): n_b b 2 B P M. Text-faithful cost per round: b [B ΣP + M (B ΣP + |θ0|)].
    Not charged: dither, normalization scale, top-k indices, the first uncompressed top-k round.
thesis (Secs. 3.5 and 4.5; docs/thesis_ch3.md, docs/thesis_ch4.md)
    Per message, values at 32 bits, signs at 1 bit, and per convention:
    Ch. 3 ``B32`` (primary): indices 32 bits, one 32-bit scale per tensor;
    ``B64idx``: indices 64 bits (the CHOCO code's int64); ``Blog``: indices ceil(log2 d);
    Ch. 4 ``P`` (primary): indices ceil(log2 d), scales not counted; ``F``: as P plus the scale
    (numerically the same rule as ``Blog``). Random-k's shared seed is 32 bits in all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np

from .ledger import BitLedger

Q_FULL = 32
MIB_BITS = 8 * 2**20  # docs/comm.md, "4. Ledger and conventions": MB = 2^20 bytes
GIB_BITS = 8 * 2**30  # GB = 2^30 bytes


# ============================== gcca: BPV and CR (Shrestha & Fu, Sec. V-A.3) ======================


def gcca_bpv(r: int | Sequence[int] | np.ndarray, q: int, q_full: int = Q_FULL) -> np.ndarray:
    """BPV(r) = q_full + r q after r compressed iterations (AltMaxVar: pass q = q_full)."""
    return q_full + np.asarray(r, dtype=np.int64) * q


def gcca_bpv_from_ledger(ledger: BitLedger, entries: int, direction: str = "up", node: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(steps, BPV after each step) of one node and direction, from the recorded messages.

    BPV counts the bits that encode the entries (value/level bits and sign bits) divided by the
    entries per message (J·K), and leaves out the per-message scale, as §3.8 does. With the
    initial round recorded at step 0 as ``Identity`` and later rounds as ``cutemaxvar(q)`` this is
    exactly q_full + r q.
    """
    steps, values = ledger.per_step("values_bits", direction)
    _, signs = ledger.per_step("signs_bits", direction)
    return steps, np.cumsum(values[:, node] + signs[:, node]) / entries


def gcca_cr(r_c: int | None, r_a: int | None, q: int, q_full: int = Q_FULL) -> float | None:
    """CR = 1 - q R_C / (q_full R_A); None ("–" in Table I) when a run never meets the level."""
    if r_c is None or r_a is None:
        return None
    return 1.0 - (q * r_c) / (q_full * r_a)


def gcca_cr_from_ledgers(
    cute: BitLedger, alt: BitLedger, r_c: int | None, r_a: int | None, direction: str = "up", node: int = 0
) -> float | None:
    """CR from two ledgers: entry bits of steps 1..R_C over those of steps 1..R_A.

    Step 0 (the full-precision initial round) and the scales are left out, as in §3.8.
    """
    if r_c is None or r_a is None:
        return None

    def entry_bits(ledger: BitLedger, last: int) -> int:
        steps, values = ledger.per_step("values_bits", direction)
        _, signs = ledger.per_step("signs_bits", direction)
        sel = (steps >= 1) & (steps <= last)
        return int((values[sel, node] + signs[sel, node]).sum())

    return 1.0 - entry_bits(cute, r_c) / entry_bits(alt, r_a)


def gcca_iterations_to_level(curve: Sequence[float], level: float, *, reach: str = "below") -> int | None:
    """R of §4.3: the 1-based index of the first entry of [f(0), f(1), ...] that meets the level.

    ``reach="below"``: strictly below (objective curves); ``"at_least"``: >= (accuracy curves).
    None if the curve never meets it.
    """
    c = np.asarray(curve, dtype=np.float64)
    if reach == "below":
        hit = np.nonzero(c < level)[0]
    elif reach == "at_least":
        hit = np.nonzero(c >= level)[0]
    else:
        raise ValueError(f"reach must be 'below' or 'at_least'; got {reach!r}")
    return int(hit[0]) + 1 if hit.size else None


def round_half_even(x: float, ndigits: int = 4) -> float:
    """Round on the exact binary value, half to even (Table I prints 0.90625 as 0.9062)."""
    return float(Decimal(x).quantize(Decimal(1).scaleb(-ndigits), rounding=ROUND_HALF_EVEN))


# ============================== cvfl: communication cost (docs/comm.md, "4. Ledger and conventions") ==========================


@dataclass(frozen=True)
class CvflSetup:
    """Constants of the authors' cost code (docs/comm.md, "4. Ledger and conventions")."""

    n_b: int  # batches charged per epoch
    B: int  # batch size
    P: int  # embedding size per party
    M: int  # parties
    theta0: int  # |θ0| as the code counts it
    formula: str  # "alg1_code", "alg1_text" or "alg2"


CVFL_SETUPS = {
    "mimic": CvflSetup(15, 1000, 16, 4, 128, "alg1_code"),
    "mimic_alg2": CvflSetup(15, 1000, 16, 4, 0, "alg2"),
    "cifar10": CvflSetup(500, 100, 16, 4, 640, "alg1_code"),
    "modelnet10": CvflSetup(16, 64, 4096, 4, 163_840, "alg1_code"),
    "modelnet10_m12": CvflSetup(16, 64, 4096, 12, 491_520, "alg1_code"),
    "imagenet100": CvflSetup(495, 256, 128, 4, 51_200, "alg1_text"),
}
CVFL_FORMULAS = ("alg1_code", "alg1_text", "alg2")


def cvfl_epoch_bits(b: int, *, n_b: int, B: int, P: int, M: int, theta0: int, formula: str) -> int:
    """Bits charged per epoch (docs/comm.md, "4. Ledger and conventions").

    alg1_code: n_b b (2 B P M² + M θ0)   (MIMIC, CIFAR-10, ModelNet10: over-counts the upload by M)
    alg1_text: n_b b (B P M (M+1) + M θ0) (ImageNet-100; equals the text's per-round formula)
    alg2:      n_b b 2 B P M              (Algorithm 2 at Q = 1, gradients charged at b bits, A-12)
    """
    if formula == "alg1_code":
        per_batch = 2 * B * P * M * M + M * theta0
    elif formula == "alg1_text":
        per_batch = B * P * M * (M + 1) + M * theta0
    elif formula == "alg2":
        per_batch = 2 * B * P * M
    else:
        raise ValueError(f"formula must be one of {', '.join(CVFL_FORMULAS)}; got {formula!r}")
    return int(n_b) * int(b) * int(per_batch)


def cvfl_epoch_bits_table(dataset: str, b: int, alg: int = 1) -> int:
    """The authors' ``bits_table_epoch`` (docs/comm.md, "4. Ledger and conventions"): dataset one of ``CVFL_SETUPS`` keys."""
    if dataset not in CVFL_SETUPS:
        raise ValueError(f"dataset must be one of {', '.join(CVFL_SETUPS)}; got {dataset!r}")
    if alg not in (1, 2):
        raise ValueError(f"alg must be 1 or 2; got {alg!r}")
    s = CVFL_SETUPS[dataset]
    formula = "alg2" if alg == 2 else s.formula
    return cvfl_epoch_bits(b, n_b=s.n_b, B=s.B, P=s.P, M=s.M, theta0=s.theta0, formula=formula)


def cvfl_round_bits_text(b: int, *, B: int, P: int | Sequence[int], M: int, theta0: int) -> int:
    """Text-faithful bits of one Alg.-1 round: b [B ΣP_m (upload) + M (B ΣP_m + |θ0|) (download)]."""
    sum_p = int(np.sum(P)) if np.ndim(P) else int(P) * M
    return int(b) * (B * sum_p + M * (B * sum_p + int(theta0)))


def cvfl_bits_from_ledger(ledger: BitLedger) -> tuple[np.ndarray, np.ndarray]:
    """(steps, cumulative bits) over all nodes and directions, priced as C-VFL prices them:
    the value bits only (no normalization scale, A-8; no top-k indices, A-9)."""
    steps, values = ledger.per_step("values_bits")
    return steps, np.cumsum(values.sum(axis=1))


def cvfl_topk_k(P: int, b: int, flavor: str = "torch") -> int:
    """Embedding top-k's k (the authors' code; docs/cvfl.md): ``"torch"`` P - ceil(P(1 - b/32)) (CIFAR, ModelNet,
    ImageNet), ``"tf"`` ceil(P b/32) (MIMIC). Exact rational arithmetic, no float rounding."""
    if flavor == "torch":
        return P - (-(-P * (32 - b) // 32))
    if flavor == "tf":
        return -(-P * b // 32)
    raise ValueError(f"flavor must be 'torch' or 'tf'; got {flavor!r}")


def bits_to_mib(bits: float | np.ndarray) -> float | np.ndarray:
    return np.asarray(bits, dtype=np.float64) / MIB_BITS


def bits_to_gib(bits: float | np.ndarray) -> float | np.ndarray:
    return np.asarray(bits, dtype=np.float64) / GIB_BITS


# ============================== thesis: bit counts (ch3 §3.5, ch4 §1.3.5) ========================


@dataclass(frozen=True)
class ThesisConvention:
    index_bits: int | str  # 32, 64 or "log2" (ceil(log2 d))
    count_scales: bool


THESIS_CONVENTIONS = {
    "B32": ThesisConvention(32, True),
    "B64idx": ThesisConvention(64, True),
    "Blog": ThesisConvention("log2", True),
    "P": ThesisConvention("log2", False),
    "F": ThesisConvention("log2", True),
}
CH3_CONVENTIONS = ("B32", "B64idx", "Blog")  # the bit counts thesis ch. 3 reports (§3.5)
THESIS_KINDS = ("identity", "sign", "topk", "sign_topk", "randk", "qsgd", "qsgd_topk")


def _convention(name: str) -> ThesisConvention:
    if name not in THESIS_CONVENTIONS:
        raise ValueError(f"convention must be one of {', '.join(THESIS_CONVENTIONS)}; got {name!r}")
    return THESIS_CONVENTIONS[name]


def thesis_message_bits(
    kind: str, d: int, *, k: int | None = None, s: int | None = None, convention: str = "B32", shared_seed: bool = True
) -> int:
    """Bits of one tensor's message by the thesis' table (ch3 §3.5; ch4 §1.3.5 for P/F).

    identity 32d; sign d + scale; topk k(32 + idx); sign_topk k(1 + idx) + scale;
    randk 32k + 32 (shared seed, A-23) or k(32 + idx); qsgd d(1 + ceil(log2(s+1))) + scale;
    qsgd_topk k(idx + 1 + ceil(log2(s+1))) + scale. scale = 32 or 0, idx per the convention.
    """
    conv = _convention(convention)
    idx = int(math.ceil(math.log2(d))) if conv.index_bits == "log2" else int(conv.index_bits)
    scale = 32 if conv.count_scales else 0
    if kind not in THESIS_KINDS:
        raise ValueError(f"kind must be one of {', '.join(THESIS_KINDS)}; got {kind!r}")
    if kind in ("topk", "sign_topk", "randk", "qsgd_topk") and k is None:
        raise ValueError(f"kind {kind!r} needs parameter 'k'")
    if kind in ("qsgd", "qsgd_topk") and s is None:
        raise ValueError(f"kind {kind!r} needs parameter 's'")
    level = int(math.ceil(math.log2(s + 1))) if s is not None else 0
    return {
        "identity": lambda: 32 * d,
        "sign": lambda: d + scale,
        "topk": lambda: k * (32 + idx),
        "sign_topk": lambda: k * (1 + idx) + scale,
        "randk": lambda: 32 * k + 32 if shared_seed else k * (32 + idx),
        "qsgd": lambda: d * (1 + level) + scale,
        "qsgd_topk": lambda: k * (idx + 1 + level) + scale,
    }[kind]()


def thesis_bits_per_step(ledger: BitLedger, convention: str = "B32", direction: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(steps, bits of shape (n_steps, n_nodes)) re-priced by a thesis convention."""
    conv = _convention(convention)
    if not ledger.has_counts(direction):
        raise ValueError(
            "the ledger has raw-bit records; record Compressed messages (ledger.record(direction, out)) "
            "so that the thesis conventions can re-price indices and scales"
        )

    def field(name: str) -> np.ndarray:
        return ledger.per_step(name, direction)[1]

    steps = ledger.steps(direction)
    bits = field("values_bits") + field("signs_bits") + 32 * field("n_seeds")
    if conv.count_scales:
        bits = bits + 32 * field("n_scales")
    if conv.index_bits == "log2":
        bits = bits + field("indices_log2_bits")
    else:
        bits = bits + int(conv.index_bits) * field("n_indices")
    return steps, bits


def thesis_bits_from_ledger(ledger: BitLedger, convention: str = "B32", direction: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(steps, cumulative network-wide bits B(t)) by a thesis convention (ch3 §3.5: B(t) sums over
    nodes; divide by n for the per-node average)."""
    steps, bits = thesis_bits_per_step(ledger, convention, direction)
    return steps, np.cumsum(bits.sum(axis=1))


def thesis_ch4_cumulative_bits(t: int | np.ndarray, message_bits: int, d: int, n_edges: int) -> np.ndarray:
    """Ch. 4 cumulative bits after iteration t >= 1 (thesis Sec. 4.5, ch4:A-B1):
    B(t) = 2|E| [32 d + (t - 1) b(C)], the first iteration uncompressed, each message unicast."""
    t = np.asarray(t, dtype=np.int64)
    return 2 * n_edges * (32 * d + (t - 1) * int(message_bits))
