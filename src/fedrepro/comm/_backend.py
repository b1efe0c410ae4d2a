"""The few array operations the compressors need, for numpy and torch alike.

Compressors are written once against these helpers, so a numpy array stays numpy (on the CPU)
and a torch tensor stays torch (on its own device, with its dtype); no data crosses between the
two libraries. Every function takes and returns 2-D arrays ``(batch, entries)`` unless it says
otherwise.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import dense  # noqa: F401


class _LazyTorch:
    """torch, imported on first use: numpy-only callers (most experiments) skip its 2-3 s import."""

    def __getattr__(self, name: str) -> Any:
        import torch as _torch

        return getattr(_torch, name)


torch = _LazyTorch()


def is_torch(x: Any) -> bool:
    # A tensor can only exist once torch is imported, so an unimported torch means "not a tensor".
    loaded = sys.modules.get("torch")
    return loaded is not None and isinstance(x, loaded.Tensor)


def check_input(x: Any) -> None:
    """Floating arrays only: the payload bits assume real-valued entries."""
    if is_torch(x):
        if not x.dtype.is_floating_point:
            raise ValueError(f"x must be a floating-point tensor; got dtype {x.dtype}")
        return
    if not isinstance(x, np.ndarray):
        raise ValueError(f"x must be a numpy.ndarray or torch.Tensor; got {type(x).__name__}")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be a floating-point array; got dtype {x.dtype}")


def uniforms(x: Any, shape: tuple[int, int], rng: Any) -> Any:
    """One block of U[0, 1) draws in float64, from the generator matching x's library.

    float64 so that a draw is never rounded up to 1.0 (which would move a zero entry to the
    first level) and so that random-k keys practically never tie. One block per call, drawn in
    C order, means a batch of B elements consumes exactly the stream that B single calls would.
    """
    if is_torch(x):
        if not isinstance(rng, torch.Generator):
            raise ValueError(
                f"rng must be a torch.Generator for torch input; got {type(rng).__name__}. "
                "Create one with torch.Generator(device=x.device).manual_seed(seed)"
            )
        return torch.rand(shape, generator=rng, dtype=torch.float64, device=x.device)
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator for numpy input; got {type(rng).__name__}. "
            "Create one with fedrepro.runtime.rng_stream(...) or numpy.random.default_rng(seed)"
        )
    return rng.random(shape)


def abs_(x):
    return x.abs() if is_torch(x) else np.abs(x)


def sign(x):
    return torch.sign(x) if is_torch(x) else np.sign(x)


def floor(x):
    return torch.floor(x) if is_torch(x) else np.floor(x)


def round_(x):
    # Both libraries round half to even.
    return torch.round(x) if is_torch(x) else np.round(x)


def clip(x, lo, hi):
    return torch.clamp(x, lo, hi) if is_torch(x) else np.clip(x, lo, hi)


def where(cond, a, b):
    return torch.where(cond, a, b) if is_torch(cond) else np.where(cond, a, b)


def row_sum(x):
    return x.sum(dim=1, keepdim=True) if is_torch(x) else x.sum(axis=1, keepdims=True)


def row_max(x):
    return x.amax(dim=1, keepdim=True) if is_torch(x) else x.max(axis=1, keepdims=True)


def sqrt(x):
    return torch.sqrt(x) if is_torch(x) else np.sqrt(x)


def zeros_like(x):
    return torch.zeros_like(x) if is_torch(x) else np.zeros_like(x)


def as_dtype_of(a, like):
    """Cast ``a`` to the dtype (and device) of ``like``."""
    if is_torch(like):
        return a.to(dtype=like.dtype)
    return a.astype(like.dtype, copy=False)


def reshape(x, shape):
    return x.reshape(shape)


def gather(x, idx):
    """x[b, idx[b, j]] for every row b."""
    return torch.gather(x, 1, idx) if is_torch(x) else np.take_along_axis(x, idx, axis=1)


def scatter(like, idx, values):
    """Zeros shaped like ``like`` with ``values[b, j]`` placed at ``idx[b, j]``."""
    out = zeros_like(like)
    if is_torch(like):
        return out.scatter_(1, idx, values)
    np.put_along_axis(out, idx, values, axis=1)
    return out


def largest_k(score, k: int):
    """Column indices of the k largest scores of every row (in no particular order).

    numpy: argpartition (linear time), torch: topk. Both are deterministic for a given input, and
    both treat rows independently, so a row gives the same indices alone or inside a batch.
    """
    d = score.shape[1]
    if is_torch(score):
        return torch.topk(score, k, dim=1, largest=True, sorted=False).indices
    if k == d:
        return np.broadcast_to(np.arange(d), score.shape).copy()
    return np.argpartition(score, d - k, axis=1)[:, d - k :]


def largest_abs_k(x, k: int):
    """``largest_k(abs_(x), k)``, the same indices in the same order. A CPU float tensor with k·64 <= d (where
    torch.topk partially sorts, so its answer is the k largest, largest first) goes through the compiled
    fedrepro.kernels.dense.top_magnitudes when the answer is unique (no tie at or above the k-th magnitude, no
    NaN) and x has at least fedrepro.kernels.MIN_WORK entries; otherwise, and for numpy input, abs then
    ``largest_k``."""
    xs = host_float_view(x) if is_torch(x) and x.dim() == 2 and k * 64 <= x.shape[1] else None
    if xs is not None:
        from fedrepro import kernels

        compiled = kernels.compiled("dense", xs.size)
        if compiled is not None:
            idx = torch.empty((x.shape[0], k), dtype=torch.int64)
            if compiled.top_magnitudes(xs, k, idx.numpy()):
                return idx
    return largest_k(abs_(x), k)


def norm_l1(x):
    return row_sum(abs_(x))


def norm_l2(x):
    return sqrt(row_sum(x * x))


def to_numpy_int(a) -> np.ndarray:
    """int64 numpy copy of a small per-element array (bits, counts), whatever its library."""
    if is_torch(a):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=np.int64)


def like_array(values, like):
    """A constant array in x's library, dtype and device (for small lattice tables)."""
    if is_torch(like):
        return torch.as_tensor(values, dtype=like.dtype, device=like.device)
    return np.asarray(values, dtype=like.dtype)


def index_rows(x, mask_np: np.ndarray):
    """x[mask] along the leading axis, with a numpy boolean mask."""
    if is_torch(x):
        return x[torch.as_tensor(mask_np, device=x.device)]
    return x[mask_np]


def rows_of(mask_np: np.ndarray | None, batch: int, like):
    """Row numbers (where mask_np is True, or all ``batch`` rows) as an int64 array in like's library and device."""
    rows = np.arange(batch) if mask_np is None else np.flatnonzero(mask_np)
    return torch.as_tensor(rows, device=like.device) if is_torch(like) else rows


def host_float_view(x) -> np.ndarray | None:
    """A NumPy view sharing x's memory for a compiled kernel to write into: x a C-contiguous float32/float64 NumPy
    array, or such a CPU tensor outside autograd; else None (the caller keeps its library path)."""
    if is_torch(x):
        if (x.device.type != "cpu" or x.requires_grad or not x.is_contiguous()
                or x.dtype not in (torch.float32, torch.float64)):
            return None
        return x.numpy()
    if isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64) and x.flags.c_contiguous:
        return x
    return None


def is_contiguous(x) -> bool:
    return x.is_contiguous() if is_torch(x) else bool(x.flags.c_contiguous)


def set_rows(x, mask_np: np.ndarray, rows):
    """Copy of x with x[mask] replaced by rows."""
    out = x.clone() if is_torch(x) else x.copy()
    if is_torch(x):
        out[torch.as_tensor(mask_np, device=x.device)] = rows
    else:
        out[mask_np] = rows
    return out


def stack_last(a, b):
    """Interleave two (B, n) arrays into (B, n, 2)."""
    return torch.stack((a, b), dim=-1) if is_torch(a) else np.stack((a, b), axis=-1)
