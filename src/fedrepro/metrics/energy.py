"""Total energy captured % (adept.md 4.2): 100 (1 - ||x - xhat||^2 / ||x||^2), averaged over samples then clients."""

from __future__ import annotations

import torch


def energy_captured(x: torch.Tensor, xhat: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """x, xhat: (m, B, *shape) stacked clients; mask (m, B).  Returns the per-client energy % (m,)."""
    e = 1.0 - ((x - xhat) ** 2).flatten(2).sum(-1) / (x ** 2).flatten(2).sum(-1).clamp_min(1e-30)
    if mask is None:
        mask = torch.ones_like(e)
    return 100.0 * (e * mask).sum(1) / mask.sum(1)
