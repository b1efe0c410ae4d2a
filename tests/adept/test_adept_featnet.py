"""The proxy feature network's test accuracy, evaluated in chunks, against one forward over the whole test set."""

from types import SimpleNamespace

import numpy as np
import torch

from fedrepro.adept import dgm


def test_chunked_test_accuracy_equals_the_whole_set_forward(monkeypatch):
    monkeypatch.setattr(dgm, "EVAL_CHUNK", 64)           # 300 test images: four full chunks and a partial one
    rng = np.random.default_rng(0)
    split = SimpleNamespace(x_train=rng.random((96, 1, 28, 28), dtype=np.float32),
                            y_train=rng.integers(0, 10, 96),
                            x_test=rng.random((300, 1, 28, 28), dtype=np.float32),
                            y_test=rng.integers(0, 10, 300))
    net, acc = dgm.train_featnet(split, {"n_train": 96, "epochs": 1}, seed=0)
    with torch.no_grad():
        whole = net(torch.from_numpy(split.x_test)).argmax(1).numpy()
    assert acc == float((whole == split.y_test).mean())
    assert 0 < acc < 1                                    # a count over all 300 images, not a degenerate one
