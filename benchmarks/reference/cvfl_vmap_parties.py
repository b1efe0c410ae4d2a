"""The C-VFL ResNet-18 parties as they were before issue 19: M torchvision resnet18s stacked with
torch.func.stack_module_state and vmapped (grouped convolutions), BatchNorm always on batch statistics (no running
statistics under vmap). Kept as the reference the per-party loop (fedrepro.models.vfl_parties.StackedResNet18)
is checked against (tests/cvfl/test_cvfl_parties.py) and timed against (benchmarks/bench_cvfl.py)."""

from __future__ import annotations

import torch
from torch import nn


class VmapResNet18(nn.Module):
    """M torchvision ``resnet18(num_classes=P)``s, vmapped: x (M, B, 3, H, W) -> (M, B, P).

    stem "cifar" (§5.A.2, 16x16 quadrants): 3x3 stride-1 conv, no max-pool. stem "imagenet" (§5.A.4, 112x112
    quadrants): torchvision's own 7x7 stride-2 conv + 3x3 stride-2 max-pool. Both end in avg-pool -> Linear(512, P).

    BatchNorm under vmap cannot update running statistics, so the parties' BatchNorms use batch
    statistics in training and evaluation (``torch.func.replace_all_batch_norm_modules_``): this is what
    the authors' code effectively did at test time ([C], §5.A.2), not A-6's eval mode (docs/cvfl.md).
    """

    STEMS = ("cifar", "imagenet")

    def __init__(self, M: int, P: int, stem: str = "cifar") -> None:
        super().__init__()
        import copy

        import torchvision
        from torch.func import replace_all_batch_norm_modules_, stack_module_state

        if stem not in self.STEMS:
            raise ValueError(f"stem must be one of {', '.join(self.STEMS)}; got {stem!r}")

        def one():
            net = torchvision.models.resnet18(num_classes=P)
            if stem == "cifar":  # 3x3 stride-1 stem, no max-pool (§5.A.2); head 512 -> P
                net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
                net.maxpool = nn.Identity()
            return replace_all_batch_norm_modules_(net)

        nets = [one() for _ in range(M)]
        params, buffers = stack_module_state(nets)
        self.params = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(v) for k, v in params.items()})
        self._buffers_stacked = buffers
        self._base = [copy.deepcopy(nets[0]).to("meta")]
        self.P = P

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.func import functional_call, vmap

        base = self._base[0]
        params = {k.replace("__", "."): v for k, v in self.params.items()}
        buffers = {k: v.to(x.device) for k, v in self._buffers_stacked.items()}

        def f(p, b, xm):
            return functional_call(base, (p, b), (xm,))

        return vmap(f)(params, buffers, x)

    def last_bias(self) -> torch.Tensor:
        return self.params["fc__bias"]
