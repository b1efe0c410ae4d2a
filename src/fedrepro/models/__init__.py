"""Shared networks for the papers: multinomial logistic regression (batched over nodes), CIFAR ResNet-20
(He et al. 2016, option-A shortcuts, width multiplier), ResNet-50 (torchvision, no pretrained weights), and
helpers to train n copies of a torch module at once as one stacked parameter matrix (torch.func)."""

from fedrepro.models.logreg import softmax_regression_grad, softmax_regression_loss, softmax_regression_predict
from fedrepro.models.resnet import resnet20, resnet50
from fedrepro.models.stacked import StackedModel

__all__ = ["softmax_regression_grad", "softmax_regression_loss", "softmax_regression_predict", "resnet20",
           "resnet50", "StackedModel"]
