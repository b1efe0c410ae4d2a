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


def test_the_weight_file_has_the_same_bytes_in_every_build(tmp_path):
    """Two runs of the feature net on the same data write byte-identical `.pt` files (torch names the archive's
    inner folder after the path it saves to; the runner saves through a file object, not its temporary path)."""
    import logging
    from pathlib import Path

    from fedrepro.models.adept_nets import FeatureNet
    from fedrepro.runner import RunContext

    rng = np.random.default_rng(0)
    y = np.tile(np.arange(10), 10).astype(np.int64)
    data = tmp_path / "mnist.npz"
    np.savez(data, x_train=rng.integers(0, 256, (100, 28, 28), dtype=np.uint8), y_train=y,
             x_test=rng.integers(0, 256, (100, 28, 28), dtype=np.uint8), y_test=y)
    files = []
    for build in ("a", "b"):
        (tmp_path / build).mkdir()
        ctx = RunContext(paper="adept", experiment="featnet", configuration="mnist", scale="smoke",
                         params={"n_train": 100, "epochs": 1, "seed": 0}, inputs={"data": str(data)},
                         output=str(tmp_path / build / "mnist.csv"), log=logging.getLogger("test"))
        result = dgm.featnet(ctx)
        files.append(result.side_files[0])
    first, second = (Path(f).read_bytes() for f in files)
    assert first == second
    assert set(torch.load(files[0])) == set(FeatureNet().state_dict())      # the weights, loadable as before
