"""CIFAR-10 training augmentation on party-stacked quadrants (cvfl §5.A.2): one crop and flip of the whole image."""

import torch
import torchvision.transforms.functional as TF

from fedrepro.cvfl.sources import TensorBatches, quadrant_crop_flip
from fedrepro.data.multiview import image_quadrants


def test_quadrant_crop_flip_equals_torchvision_on_the_whole_image():
    full = torch.rand(6, 3, 32, 32) * 2 - 1                                   # Normalize(0.5, 0.5) range
    quads = torch.stack([q.contiguous() for q in image_quadrants(full, "NCHW")])    # (4, 6, 3, 16, 16)
    out = quadrant_crop_flip(quads, torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)                                      # the same draws, in the same order
    dy, dx = torch.randint(0, 9, (6,), generator=g), torch.randint(0, 9, (6,), generator=g)
    flip = torch.rand(6, generator=g) < 0.5
    assert out.shape == quads.shape and 0 < int(flip.sum()) < 6
    for i in range(6):
        ref = TF.crop(TF.pad(full[i], [4], fill=-1.0), int(dy[i]), int(dx[i]), 32, 32)
        ref = TF.hflip(ref) if flip[i] else ref
        got = torch.cat([torch.cat([out[0, i], out[1, i]], -1), torch.cat([out[2, i], out[3, i]], -1)], -2)
        assert torch.equal(got, ref)


def test_training_batches_are_augmented_and_evaluation_is_not():
    x = torch.rand(4, 10, 3, 16, 16)
    y = torch.arange(10)
    gen = torch.Generator().manual_seed(0)
    train = TensorBatches(x, y, 5, order=None, augment=lambda xb: quadrant_crop_flip(xb, gen))
    plain = TensorBatches(x, y, 5)
    (xa, ya), (xp, yp) = next(iter(train)), next(iter(plain))
    assert torch.equal(ya, yp) and xa.shape == xp.shape and not torch.equal(xa, xp)
