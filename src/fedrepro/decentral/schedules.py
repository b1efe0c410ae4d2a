"""Learning-rate and trigger-threshold schedules (thesis Sec. 3.5; docs/thesis_ch3.md).  Each is a function of the
global iteration t; `iters_per_epoch` converts to epochs e = t // iters_per_epoch where needed."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class InverseLR:
    """MNIST: η_t = a / (t + b), the thesis' 1/(t + 100)."""
    a: float = 1.0
    b: float = 100.0

    def __call__(self, t: int) -> float:
        return self.a / (t + self.b)


@dataclass(frozen=True)
class WarmupPiecewiseLR:
    """Deep nets (A-17): linear warmup from `start` to `base` over `warmup_epochs` (per iteration), then `base`
    divided by `factor` at each milestone epoch.  `mode="choco_scaleup"`: warmup from `base` to `base * scaleup`."""
    base: float = 0.1
    warmup_epochs: float = 5.0
    start: float = 0.01
    milestones: tuple = ()
    factor: float = 5.0
    iters_per_epoch: int = 1
    mode: str = "linear"
    scaleup: float = 3.0

    def __call__(self, t: int) -> float:
        e = t / self.iters_per_epoch
        peak = self.base * (self.scaleup if self.mode == "choco_scaleup" else 1.0)
        lo = self.base if self.mode == "choco_scaleup" else self.start
        if e < self.warmup_epochs:
            return lo + (peak - lo) * e / self.warmup_epochs
        k = sum(1 for m in self.milestones if e >= m)
        return peak / self.factor ** k


@dataclass(frozen=True)
class ConstantThreshold:
    c: float = 0.0

    def __call__(self, t: int, eta: float) -> float:
        return self.c


@dataclass(frozen=True)
class SqrtStepThreshold:
    """MNIST (A-21): c_t = c0 * sqrt(1 + floor(t / every)); sublinear, so c_t η_t² decreases."""
    c0: float = 5000.0
    every: int = 1000

    def __call__(self, t: int, eta: float) -> float:
        return self.c0 * math.sqrt(1 + t // self.every)


@dataclass(frozen=True)
class PiecewiseEpochThreshold:
    """Deep nets (A-18/A-19/A-20): c(e) = c0 + step * min(floor(e / every_epochs), n_steps),
    capped at cap_inv_lr / η_t (the thesis' c_t < 1/η_t).  cap_inv_lr = None: no cap."""
    c0: float = 2.5
    step: float = 1.5
    every_epochs: float = 20.0
    n_steps: int = 17
    iters_per_epoch: int = 1
    cap_inv_lr: float | None = 0.999

    def __call__(self, t: int, eta: float) -> float:
        e = t / self.iters_per_epoch
        c = self.c0 + self.step * min(int(e // self.every_epochs), self.n_steps)
        if self.cap_inv_lr is not None and eta > 0:
            c = min(c, self.cap_inv_lr / eta)
        return c


def make_lr(spec: dict, iters_per_epoch: int = 1):
    kind = spec.get("kind", "inverse")
    if kind == "inverse":
        return InverseLR(float(spec.get("a", 1.0)), float(spec.get("b", 100.0)))
    if kind == "constant":
        v = float(spec["value"])
        return lambda t: v
    if kind == "warmup_piecewise":
        return WarmupPiecewiseLR(base=float(spec.get("base", 0.1)), warmup_epochs=float(spec.get("warmup_epochs", 5)),
                                 start=float(spec.get("start", 0.01)),
                                 milestones=tuple(float(m) for m in spec.get("milestones", ())),
                                 factor=float(spec.get("factor", 5.0)), iters_per_epoch=int(iters_per_epoch),
                                 mode=spec.get("mode", "linear"), scaleup=float(spec.get("scaleup", 3.0)))
    raise ValueError(f"lr kind must be inverse, constant or warmup_piecewise; got {kind!r}")


def make_threshold(spec: dict | None, iters_per_epoch: int = 1, scale: float = 1.0):
    """`scale` multiplies the whole schedule (A-22 calibration / the threshold sweep)."""
    spec = spec or {"kind": "none"}
    kind = spec.get("kind", "none")
    if kind == "none":
        return ConstantThreshold(0.0)
    if kind == "constant":
        return ConstantThreshold(float(spec["c"]) * scale)
    if kind == "sqrt_step":
        return SqrtStepThreshold(float(spec.get("c0", 5000.0)) * scale, int(spec.get("every", 1000)))
    if kind == "piecewise_epoch":
        cap = spec.get("cap_inv_lr", 0.999)
        return PiecewiseEpochThreshold(c0=float(spec["c0"]) * scale, step=float(spec["step"]) * scale,
                                       every_epochs=float(spec["every_epochs"]), n_steps=int(spec["n_steps"]),
                                       iters_per_epoch=int(iters_per_epoch),
                                       cap_inv_lr=None if cap is None else float(cap) * scale)
    raise ValueError(f"trigger kind must be none, constant, sqrt_step or piecewise_epoch; got {kind!r}")
