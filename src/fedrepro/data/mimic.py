"""MIMIC-III in-hospital mortality: the mimic3-benchmarks Discretizer, vectorized across episodes.

Reproduces `mimic3models.preprocessing.Discretizer(timestep=1.0, store_masks=True, impute_strategy=
'previous', start_time='zero')` applied with end=48 h, as the IHM task and C-VFL use it: per hourly bin
the last value of each of the 17 variables, categorical ones one-hot, gaps filled with the previous
value (else the variable's normal value), then 17 mask channels -> 76 channels.  The channel list,
categories and normal values come from the user's own checkout
(mimic3models/resources/discretizer_config.json), so nothing of the benchmark is guessed here.
Continuous channels are standardized with train statistics (the benchmark's Normalizer does the same
from its pre-computed sums; ddof=1, a zero std becomes 1).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

log = logging.getLogger("fedrepro.data")
EPS = 1e-6


def discretizer_header(cfg: dict) -> tuple[list[str], np.ndarray]:
    """Column names in the benchmark's order and, per column, whether it is continuous."""
    header = []
    for ch in cfg["id_to_channel"]:
        if cfg["is_categorical_channel"][ch]:
            header += [f"{ch}->{v}" for v in cfg["possible_values"][ch]]
        else:
            header.append(ch)
    header += [f"mask->{ch}" for ch in cfg["id_to_channel"]]
    continuous = np.array(["->" not in h for h in header])
    return header, continuous


def read_episodes(folder: Path, stays) -> pd.DataFrame:
    """All episode time series of a split in one frame (strings kept as read; '' = not measured)."""
    frames = []
    for i, stay in enumerate(stays):                       # reading is per file; everything after is vectorized
        df = pd.read_csv(folder / stay, dtype=str, keep_default_na=False)
        df.insert(0, "_episode", i)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def discretize(frame: pd.DataFrame, n_episodes: int, cfg: dict, hours: float = 48.0, timestep: float = 1.0) -> np.ndarray:
    """(n_episodes, n_bins, 76) float32 before normalization, as the benchmark's Discretizer.transform."""
    channels = cfg["id_to_channel"]
    n_bins = int(hours / timestep + 1.0 - EPS)
    t = frame["Hours"].astype(float).to_numpy()
    keep = (t > -EPS) & (t <= hours + EPS)
    frame = frame[keep]
    ep = frame["_episode"].to_numpy()
    b = np.clip(np.trunc(t[keep] / timestep - EPS).astype(int), 0, n_bins - 1)
    blocks, masks = [], []
    for ch in channels:                                      # 17 variables, not samples
        vals = frame[ch].to_numpy() if ch in frame else np.full(len(frame), "", dtype=object)
        seen = vals != ""
        categorical = cfg["is_categorical_channel"][ch]
        if categorical:
            cats = cfg["possible_values"][ch]
            code = pd.Series(vals[seen]).map({v: float(i) for i, v in enumerate(cats)}).to_numpy()
            if np.isnan(code).any():
                bad = sorted(set(vals[seen][np.isnan(code)]))[:5]
                raise ValueError(f"MIMIC channel {ch!r} has values {bad} missing from discretizer_config.json possible_values")
            normal = float(cats.index(cfg["normal_values"][ch]))
        else:
            code = vals[seen].astype(float)
            normal = float(cfg["normal_values"][ch])
        grid = np.full((n_episodes, n_bins), np.nan)
        # rows are in file order and the last value in a bin wins: keep each (episode, bin)'s last occurrence
        lin = ep[seen] * n_bins + b[seen]
        _, first_from_end = np.unique(lin[::-1], return_index=True)
        last_row = len(lin) - 1 - first_from_end
        grid.flat[lin[last_row]] = code[last_row]
        observed = ~np.isnan(grid)
        # forward fill along time: index of the last observed bin so far
        last = np.where(observed, np.arange(n_bins)[None, :], -1)
        np.maximum.accumulate(last, axis=1, out=last)
        filled = np.where(last >= 0, np.take_along_axis(grid, np.maximum(last, 0), axis=1), normal)
        if categorical:
            blocks.append(np.eye(len(cats))[filled.astype(int)])
        else:
            blocks.append(filled[:, :, None])
        masks.append(observed.astype(np.float64))
    return np.concatenate(blocks + [np.stack(masks, axis=2)], axis=2).astype(np.float32)


def prepare_mimic3_ihm(files: dict, folder: Path, hours: float = 48.0, timestep: float = 1.0) -> dict:
    """The benchmark's IHM folders -> x_{train,val,test} (n, 48, 76) float32, y int64, header."""
    cfg = json.loads(Path(files["mimic3models/resources/discretizer_config.json"]).read_text())
    header, continuous = discretizer_header(cfg)
    task = folder / "data" / "in-hospital-mortality"
    splits = {"train": ("train", task / "train_listfile.csv"), "val": ("train", task / "val_listfile.csv"),
              "test": ("test", task / "test" / "listfile.csv")}
    out = {}
    for split, (sub, listfile) in splits.items():
        lst = pd.read_csv(listfile)
        frame = read_episodes(task / sub, lst["stay"].tolist())
        out[f"x_{split}"] = discretize(frame, len(lst), cfg, hours, timestep)
        out[f"y_{split}"] = lst["y_true"].to_numpy(dtype=np.int64)
        out[f"stays_{split}"] = lst["stay"].to_numpy().astype(str)
        log.info("MIMIC IHM %s: %d stays, %.1f%% positive", split, len(lst), 100 * out[f"y_{split}"].mean())
    xtr = out["x_train"][:, :, continuous].reshape(-1, continuous.sum()).astype(np.float64)
    mu = xtr.mean(axis=0)
    sd = xtr.std(axis=0, ddof=1)
    sd[sd < 1e-7] = 1.0
    for split in splits:
        x = out[f"x_{split}"]
        x[:, :, continuous] = ((x[:, :, continuous] - mu) / sd).astype(np.float32)
    out.update({"header": np.array(header), "channel_is_mask": np.array([h.startswith("mask->") for h in header]),
                "normalizer_mean": mu, "normalizer_std": sd})
    return out
