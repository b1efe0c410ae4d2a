"""Thesis Fig. 3.1's streamed ImageNet task: node batches from an image folder, streamed evaluation."""

import numpy as np
import pytest
import torch
from PIL import Image

from fedrepro.data.imagefolder import TRAIN, VAL, ImageFiles, ImageTransform
from fedrepro.data.loaders import ImageIndex
from fedrepro.decentral.experiments import ImageFolderTask, build_engine, methods
from fedrepro.models.resnet import resnet20

PARAMS = {"n": 3, "topology": "ring", "lr": {"kind": "constant", "value": 0.05}, "beta": 0.9, "H": 1,
          "methods": {"vanilla": {"algorithm": "dsgd"}}, "iters_per_epoch": 4}


def colour_folder(tmp_path, n_per_class=10, classes=3, size=20) -> ImageIndex:
    """Classes are flat colours plus noise: learnable in a few steps."""
    rng = np.random.default_rng(0)
    base = np.array([[220, 30, 30], [30, 220, 30], [30, 30, 220]])
    paths, labels, split = [], [], []
    for c in range(classes):
        for j in range(n_per_class):
            arr = np.clip(base[c] + rng.normal(0, 25, (size, size, 3)), 0, 255).astype(np.uint8)
            p = tmp_path / f"{c}_{j}.png"
            Image.fromarray(arr).save(p)
            paths.append(str(p)), labels.append(c), split.append(VAL if j >= n_per_class - 3 else TRAIN)
    return ImageIndex(paths, np.array(labels), np.array(split), np.array(["a", "b", "c"]), "real")


def make_task(index, seed=0, **kw):
    torch.manual_seed(seed)
    module = resnet20(num_classes=3, width=2, depth_blocks=1)
    return ImageFolderTask(module, index, n=3, partition="iid", batch=2, seed=seed, image_size=16, train_eval=None,
                           eval_batch=4, **kw)


def test_streamed_evaluation_equals_in_memory(tmp_path):
    index = colour_folder(tmp_path)
    task = make_task(index, augment=False)
    w = task.x0()[0] + 0.01 * torch.randn(task.d, generator=torch.Generator().manual_seed(1))
    ev = task.evaluate(w)
    val = ImageFiles(index, VAL, ImageTransform(16, train=False))
    x = torch.stack([val[(i, 0)][0] for i in range(len(val))])
    y = torch.as_tensor(val.labels)
    logits = task.model.predict_logits(w, x)
    assert abs(ev["test_acc"] - float(logits.argmax(1).eq(y).double().mean())) < 1e-12   # 9 images, batches of 4
    tr = ImageFiles(index, TRAIN, ImageTransform(16, train=False))
    xt = torch.stack([tr[(i, 0)][0] for i in range(len(tr))])
    want = float(torch.nn.functional.cross_entropy(task.model.predict_logits(w, xt), torch.as_tensor(tr.labels)))
    assert abs(ev["train_loss"] - want) < 1e-5


@pytest.mark.slow  # several seconds: kept out of the fast set
def test_node_batches_feed_each_node_its_shard_and_training_learns(tmp_path):
    index = colour_folder(tmp_path)
    task = make_task(index)
    assert task.shards.shape == (3, 7) and len(np.unique(task.shards)) == 21          # disjoint equal shards
    eng = build_engine(PARAMS, methods(PARAMS)[0], task, seed=0)
    before = task.evaluate(eng.mean_model())["train_loss"]
    for _ in range(20):
        eng.step(task.grad)
    after = task.evaluate(eng.mean_model())
    assert after["train_loss"] < 0.7 * before and after["test_acc"] > 0.6
    assert eng.bits.sum() > 0


def test_same_seed_same_run(tmp_path):
    index = colour_folder(tmp_path)
    outs = []
    for _ in range(2):
        task = make_task(index, seed=3)
        eng = build_engine(PARAMS, methods(PARAMS)[0], task, seed=3)
        for _ in range(3):
            eng.step(task.grad)
        outs.append(eng.mean_model())
    assert torch.equal(outs[0], outs[1])


def _run(task, eng, steps):
    for _ in range(steps):
        eng.step(task.grad)


def test_a_run_resumed_from_a_checkpoint_equals_the_straight_run(tmp_path):
    """Thesis Fig. 3.1's resume: engine and task saved after 5 of 11 steps (the batches of a shard's epoch wrap at
    step 4), loaded into a fresh task and engine, and run on: the same iterates, copies and BatchNorm statistics as
    the straight run, with the consumed batches drawn again but not decoded."""
    index = colour_folder(tmp_path)
    method = methods(PARAMS)[0]
    straight = make_task(index)
    straight_engine = build_engine(PARAMS, method, straight, seed=0)
    _run(straight, straight_engine, 11)

    first = make_task(index)
    first_engine = build_engine(PARAMS, method, first, seed=0)
    _run(first, first_engine, 5)
    torch.save({"engine": first_engine.state_dict(), "task": first.state_dict()}, tmp_path / "checkpoint.pt")

    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    resumed = make_task(index)
    resumed.load_state_dict(saved["task"])
    resumed_engine = build_engine(PARAMS, method, resumed, seed=0)
    resumed_engine.load_state_dict(saved["engine"])
    _run(resumed, resumed_engine, 6)

    assert torch.equal(straight_engine.X, resumed_engine.X) and torch.equal(straight_engine.V, resumed_engine.V)
    assert straight.consumed == resumed.consumed == 11
    for name, value in straight.model.buffers.items():
        assert torch.equal(value, resumed.model.buffers[name]), name
