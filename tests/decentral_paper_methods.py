"""The chapter's methods (thesis ch. 3 §3.2) as the registry writes them, for tests of the engine:
method_config("choco_topk", gamma=0.4, k=10) = algorithm_config("choco", {"name": "topk", "k": 10}, gamma=0.4)."""

from __future__ import annotations

from fedrepro.decentral.engine import EngineConfig, algorithm_config

# name -> (algorithm, compressor); Sign-TopK and TopK take k (or a per-tensor ratio, default 0.01)
METHODS = {"squarm": ("squarm", "sign_topk"), "squarm_noet": ("choco", "sign_topk"), "choco_sign": ("choco", "sign"),
           "choco_topk": ("choco", "topk"), "vanilla": ("dsgd", None)}


def method_config(method: str, *, gamma: float, k: int | None = None, ratio: float | None = None,
                  H: int | None = None, **extra) -> EngineConfig:
    algorithm, name = METHODS[method]
    if name in ("topk", "sign_topk"):
        compressor = {"name": name, **({"k": int(k)} if k is not None else {"ratio": ratio or 0.01})}
    else:
        compressor = name
    return algorithm_config(algorithm, compressor, gamma=gamma, H=5 if H is None and algorithm == "squarm" else H,
                            **extra)
