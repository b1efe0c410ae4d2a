"""The compressor of a gcca run's two links (server -> views and back), shared by the linear and deep engines."""

from __future__ import annotations

from fedrepro.registry.methods import compressor_spec


class CuteMaxVarLinks:
    """Mixed into EngineConfig and DeepConfig, which define `q` (CuteMaxVar's bits) and `compressor` (any
    fedrepro.comm spec in CuteMaxVar's place)."""

    def compressor_spec(self):
        """The compressor of both links: `compressor` if given, else CuteMaxVar(q), or the identity (AltMaxVar)."""
        if self.compressor is not None:
            return self.compressor
        return "identity" if self.q is None else {"name": "cutemaxvar", "q": self.q}

    @property
    def method(self) -> str:
        """altmaxvar (identity), cutemaxvar, or the name of the compressor that replaces CuteMaxVar's."""
        name = compressor_spec(self.compressor_spec())[0]
        return "altmaxvar" if name == "identity" else name
