"""Atomic writes leave files with the mode the umask gives any new file (group-readable on a shared FS)."""

import os
import stat

import numpy as np
import pandas as pd
import pytest

from fedrepro.data.formats import save_npz
from fedrepro.io import current_umask, write_csv, write_json, write_text


@pytest.fixture
def umask():
    old = os.umask(0o022)
    os.umask(old)

    def set_(mask):
        os.umask(mask)

    yield set_
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o027, 0o077])
def test_outputs_get_the_mode_a_plain_open_gives(mask, umask, tmp_path):
    umask(mask)
    assert current_umask() == mask
    reference = tmp_path / "plain.txt"
    reference.write_text("x")                               # what any other tool would create
    writers = {"a.txt": lambda p: write_text(p, "x"), "b.json": lambda p: write_json(p, {"a": 1}),
               "c.csv": lambda p: write_csv(p, pd.DataFrame({"a": [1]})),
               "d.npz": lambda p: save_npz(p, {"a": np.arange(3)})}
    for name, write in writers.items():
        write(tmp_path / name)
        assert _mode(tmp_path / name) == _mode(reference) == 0o666 & ~mask, name
    if not mask & 0o040:
        assert _mode(tmp_path / "c.csv") & stat.S_IRGRP         # the group can read results
