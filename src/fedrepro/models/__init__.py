"""Shared networks for the papers: multinomial logistic regression (batched over nodes), CIFAR ResNet-20
(He et al. 2016, option-A shortcuts, width multiplier), ResNet-50 (torchvision, no pretrained weights), and
helpers to train n copies of a torch module at once as one stacked parameter matrix (torch.func)."""

from fedrepro.lazy import lazy_getattr

# Names resolve lazily (PEP 562): importing one module of the package does not import the others, so start-up
# stays fast and a job's code dependencies (derived from imports) stay the modules it really uses.
_EXPORTS = {
    "StackedModel": "fedrepro.models.stacked",
    "resnet20": "fedrepro.models.resnet",
    "resnet50": "fedrepro.models.resnet",
    "softmax_regression_grad": "fedrepro.models.logreg",
    "softmax_regression_loss": "fedrepro.models.logreg",
    "softmax_regression_predict": "fedrepro.models.logreg",
}

__getattr__ = lazy_getattr(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
