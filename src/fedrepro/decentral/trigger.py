"""The event trigger (Algorithm 1, step 4): node i fires at a sync round iff ‖x_i^{t+1/2} - r_i‖² > c_t η_t²
(strict), and every node fires at the first sync round (force_first).

What r_i is, is assumption ch3:A-trigger-ref (`TriggerReference`):
  "copy"       r_i = x̂_i, the public copy (ch. 3's Algorithm 1 as printed).  With a biased compressor x̂_i lags
               x_i by the accumulated compression error, so the drift never falls below a small threshold.
  "last_sent"  r_i = x_i^{t'+1/2}, the node's own iterate at its last transmission t' (ch. 2: "the change since
               the last time communication occurred").  The message is C(x^{t+1/2} - x̂) either way: only the
               test changes, so the copies keep their implicit error feedback.
"""

from __future__ import annotations

import numpy as np
import torch

TRIGGER_REFERENCES = ("copy", "last_sent")


def trigger_mask(sq_drift: np.ndarray, c_t: float, eta: float, first: bool, force_first: bool = True) -> np.ndarray:
    """sq_drift: (n,) squared drift norms over the whole flattened vector (A-06)."""
    sq = np.asarray(sq_drift, dtype=np.float64)
    if first and force_first:
        return np.ones(sq.shape, dtype=bool)
    return sq > c_t * eta * eta


class TriggerReference:
    """The r_i the trigger measures the drift against (see the module docstring).

    `drift(sq_to_copy, x_half)` -> (n,) float64 squared drifts; `sq_to_copy` is ‖x^{t+1/2} - x̂‖² per node, which
    the engine computes anyway.  `sent(x_half, fire)` records the firing nodes' iterates (copied: the engine may
    update x_half in place afterwards)."""

    def __init__(self, kind: str = "copy"):
        if kind not in TRIGGER_REFERENCES:
            raise ValueError(f"trigger_reference must be one of {', '.join(TRIGGER_REFERENCES)}; got {kind!r}")
        self.kind = kind
        self.last: torch.Tensor | None = None      # "last_sent": x_i^{t'+1/2} per node

    def drift(self, sq_to_copy: torch.Tensor, x_half: torch.Tensor) -> np.ndarray:
        if self.kind == "copy" or self.last is None:
            return sq_to_copy.cpu().numpy()
        diff = (x_half - self.last).to(torch.float64)
        return (diff * diff).sum(dim=1).cpu().numpy()

    def sent(self, x_half: torch.Tensor, fire: np.ndarray) -> None:
        if self.kind == "copy":
            return
        if self.last is None:
            self.last = torch.zeros_like(x_half)
        rows = torch.as_tensor(np.flatnonzero(fire), device=x_half.device)
        self.last[rows] = x_half[rows]
