"""DE-SynPUF outpatient claims -> three diagnosis x medicine co-occurrence views (Shrestha & Fu, Sec. V-B.4).

The preprocessing (docs/gcca.md): per file the top diagnoses / HCPCS codes, their union, per-file co-occurrence
counts (each claim row counts a pair at most once), ICD-9 chapter labels, chapter 15 dropped, only
chapters with >= min_group_size diagnoses kept, rows sorted by label.  Step 6 (within-group shuffle,
hold-out) takes the run's seed: fedrepro.data.multiview.within_group_shuffle.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse

log = logging.getLogger("fedrepro.data")


def icd9_chapter(codes) -> np.ndarray:
    """ICD-9 chapter group (1..19) from the first three characters, as the gcca code does."""
    s = pd.Series(codes, dtype=str).str.strip().str.upper()
    head = s.str[:3]
    num = pd.to_numeric(head, errors="coerce").to_numpy()
    edges = np.array([140, 240, 290, 320, 390, 460, 520, 580, 630, 680, 710, 740, 760, 780, 800, 1000])
    group = (np.searchsorted(edges, num, side="right") + 1).astype(float)       # <140 -> 1, ..., 800-999 -> 16
    first = s.str[:1].to_numpy()
    letter = np.isnan(num)
    group = np.where(letter & (first == "E"), 17, group)
    group = np.where(letter & (first == "V"), 18, group)
    group = np.where(letter & (first != "E") & (first != "V"), 19, group)
    return group.astype(int)


def _read_claims(zip_path: Path, n_diag: int, n_hcpcs: int) -> pd.DataFrame:
    cols = [f"ICD9_DGNS_CD_{i}" for i in range(1, n_diag + 1)] + [f"HCPCS_CD_{i}" for i in range(1, n_hcpcs + 1)]
    with zipfile.ZipFile(zip_path) as z:
        csv = next(n for n in z.namelist() if n.lower().endswith(".csv"))
        with z.open(csv) as f:
            return pd.read_csv(f, usecols=cols, dtype=str)


def _top_codes(frame: pd.DataFrame, prefix: str, k: int) -> list[str]:
    vals = frame.filter(like=prefix).to_numpy().ravel()
    vals = pd.Series(vals).dropna()
    vals = vals[vals.str.strip() != ""]
    counts = vals.value_counts(sort=False)
    # count descending, code ascending on ties: a stable top-k
    order = np.lexsort((counts.index.to_numpy().astype(str), -counts.to_numpy()))
    return counts.index.to_numpy()[order][:k].tolist()


def _indicator(frame: pd.DataFrame, prefix: str, vocab: dict) -> sparse.csr_matrix:
    """rows x vocab 0/1 matrix: does claim row r mention code j in any `prefix` column."""
    vals = frame.filter(like=prefix).to_numpy()
    idx = pd.Series(vals.ravel()).map(vocab).to_numpy()
    rows = np.repeat(np.arange(len(frame)), vals.shape[1])
    ok = ~np.isnan(idx)
    m = sparse.csr_matrix((np.ones(ok.sum()), (rows[ok], idx[ok].astype(int))), shape=(len(frame), len(vocab)))
    m.sum_duplicates()
    m.data[:] = 1.0                                                   # a code twice in one row counts once
    return m


def prepare_desynpuf(files: dict, diagnosis_columns: int = 10, hcpcs_columns: int = 5, top_diagnoses: int = 1000,
                     top_hcpcs: int = 500, min_group_size: int = 40) -> dict:
    frames = [_read_claims(Path(files[n]), diagnosis_columns, hcpcs_columns) for n in sorted(files)]
    diag, hcpcs = {}, {}
    for f in frames:                                                   # dict-merge order: file 1 first
        for c in _top_codes(f, "ICD9_DGNS_CD_", top_diagnoses):
            diag.setdefault(c, len(diag))
        for c in _top_codes(f, "HCPCS_CD_", top_hcpcs):
            hcpcs.setdefault(c, len(hcpcs))
    log.info("DE-SynPUF vocabularies: %d diagnoses, %d HCPCS codes", len(diag), len(hcpcs))
    views = np.stack([(_indicator(f, "ICD9_DGNS_CD_", diag).T @ _indicator(f, "HCPCS_CD_", hcpcs)).toarray()
                      for f in frames]).astype(np.int64)
    codes = np.array(list(diag))
    chapter = icd9_chapter(codes)
    sizes = pd.Series(chapter[chapter != 15]).value_counts()
    kept_groups = np.sort(sizes[sizes >= min_group_size].index.to_numpy())
    keep = np.isin(chapter, kept_groups)
    order = np.flatnonzero(keep)[np.argsort(chapter[keep], kind="stable")]
    labels = np.searchsorted(kept_groups, chapter[order])
    log.info("DE-SynPUF: %d diagnoses in %d chapter groups %s", len(order), len(kept_groups), kept_groups.tolist())
    return {"views": views[:, order, :], "labels": labels.astype(np.int64), "chapters": kept_groups.astype(np.int64),
            "row_codes": codes[order], "col_codes": np.array(list(hcpcs))}
