"""The 100 Kbps link model of Fig. 3.3 (thesis Sec. 3.5.3): per-node uplink, broadcast, synchronous rounds (A-35).

airtime A(t) = Σ_{sync rounds <= t} max_i bits_i / R                       (A-34: 1 Kbps = 1000 bit/s)
wall(t)     = t τ_comp + Σ_{sync rounds <= t} max_i [bits_i / R + τ_oh 1{fire_i}]
Non-firing nodes send 0 bits, so max_i [...] = max_bits / R + τ_oh on every round where some node fired:
wall(t) = t τ_comp + A(t) + τ_oh R(t) with R(t) the communication rounds (A-33) and τ_oh = 0.01 s (A-36).
"""

from __future__ import annotations

import numpy as np

RATE_100KBPS = 100_000.0
TAU_OH = 0.01


def airtime(max_bits_cum, rate: float = RATE_100KBPS):
    return np.asarray(max_bits_cum, dtype=np.float64) / rate


def wall_clock(steps, max_bits_cum, rounds, tau_comp: float, rate: float = RATE_100KBPS, tau_oh: float = TAU_OH):
    steps = np.asarray(steps, dtype=np.float64)
    return steps * tau_comp + airtime(max_bits_cum, rate) + tau_oh * np.asarray(rounds, dtype=np.float64)
