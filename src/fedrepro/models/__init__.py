"""Shared networks for the papers: multinomial logistic regression (batched over nodes), CIFAR ResNet-20
(He et al. 2016, option-A shortcuts, width multiplier), ResNet-50 (torchvision, no pretrained weights), and
helpers to train n copies of a torch module at once as one stacked parameter matrix (torch.func).
"""
