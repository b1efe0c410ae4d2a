"""Figs. 9 and 12-13 pieces: the alignment accuracy AC, hashed Europarl views, the EHR co-occurrence preprocessing."""

import zipfile

import numpy as np
import pandas as pd
import pytest

from fedrepro.data.ehr import prepare_desynpuf
from fedrepro.gcca.alignment import alignment_accuracy, alignment_hits
from fedrepro.gcca.europarl import build_views, sparse_mvlsa
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.views import DenseViews


def test_alignment_accuracy_on_a_hand_made_case():
    # view 0: three points on a line; view 1: the same points, but rows 1 and 2 swapped partners
    Z0 = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    Z1 = np.array([[0.0, 0.1], [2.0, 0.0], [1.0, 0.0]])
    hits = alignment_hits(np.stack([Z0, Z1]))
    # 0 -> 1: row 0 is nearest its partner; rows 1 and 2 are nearer each other's partner -> 1 of 3; same from 1 -> 0
    assert hits[0, 1] == 1 and hits[1, 0] == 1
    assert alignment_accuracy(np.stack([Z0, Z1])) == pytest.approx(2 / 6)
    # identical views align perfectly; a tie (two equal candidates) counts as success
    assert alignment_accuracy(np.stack([Z0, Z0, Z0])) == 1.0
    Zt = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0]])
    assert alignment_accuracy(np.stack([Zt, Zt])) == 1.0


def test_alignment_accuracy_blocks_match_a_direct_loop():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((4, 37, 3))
    Z[1] = Z[0] + 0.5 * rng.standard_normal((37, 3))
    direct = 0
    for i in range(4):
        for m in range(4):
            if i != m:
                D = np.linalg.norm(Z[i][:, None] - Z[m][None], axis=-1)
                direct += np.sum(np.diag(D) <= D.min(axis=1))
    assert alignment_accuracy(Z, max_bytes=8 * 16 * 37 * 5) == pytest.approx(direct / (12 * 37))  # 5-row blocks
    assert alignment_accuracy(Z) == pytest.approx(direct / (12 * 37))


def test_hashed_views_drop_unused_buckets_exactly_and_sparse_mvlsa_matches_dense():
    texts = {"en": ["the cat sat", "a dog ran", "the dog sat down", "cats and dogs", "a cat ran far", "new words here"],
             "de": ["die katze sass", "ein hund lief", "der hund sass", "katzen und hunde", "eine katze lief weit",
                    "neue woerter hier"]}
    views, Xtest, widths = build_views(texts, ["en", "de"], np.arange(5), np.arange(5, 6), n_features=2**10)
    assert views.J == 5 and views.N == widths.max() and Xtest[0].shape == (1, views.N)
    assert Xtest[0].nnz == 0  # every test word is unseen in training: dropped (its Q row would stay 0)
    rng = np.random.default_rng(0)  # a corpus with distinct singular values, to compare MVLSA exactly
    words = [f"w{k}" for k in range(30)]
    corpus = {lang: [" ".join(f"{lang}{w}" for w in rng.choice(words, rng.integers(3, 9))) for _ in range(40)]
              for lang in ("en", "de", "fr")}
    views, _, _ = build_views(corpus, ["en", "de", "fr"], np.arange(40), np.arange(0), n_features=2**12)
    dense = DenseViews(np.stack([x.toarray() for x in views.Xs]))
    ref = mvlsa(dense, 2, 6)
    ours = sparse_mvlsa(views, 2, 6)
    assert ours.cost == pytest.approx(ref.cost, rel=1e-8)
    assert np.allclose(views.lambda_max, dense.lambda_max)


def _claims_zip(path, rows):
    cols = [f"ICD9_DGNS_CD_{i}" for i in range(1, 11)] + [f"HCPCS_CD_{i}" for i in range(1, 6)]
    frame = pd.DataFrame([{**{c: "" for c in cols}, **r} for r in rows], columns=["DESYNPUF_ID"] + cols)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("claims.csv", frame.to_csv(index=False))


def test_ehr_preprocessing_counts_cooccurrences_once_per_claim_row(tmp_path):
    d = lambda *c: {f"ICD9_DGNS_CD_{i + 1}": v for i, v in enumerate(c)}  # noqa: E731
    h = lambda *c: {f"HCPCS_CD_{i + 1}": v for i, v in enumerate(c)}  # noqa: E731
    # diagnoses 4019 (group 6: 390-459), 25000 (group 3: 240-289), 7802 (group 15, dropped); medicines A, B
    _claims_zip(tmp_path / "s1.zip", [{**d("4019", "25000"), **h("A", "B")},
                                      {**d("4019", "4019"), **h("A", "A")},   # duplicates count once
                                      {**d("7802"), **h("B")}])
    _claims_zip(tmp_path / "s2.zip", [{**d("25000"), **h("B")}])
    _claims_zip(tmp_path / "s3.zip", [{**d("4019"), **h("A")}, {**d("4019"), **h("B")}])
    out = prepare_desynpuf({f"s{i}": tmp_path / f"s{i}.zip" for i in (1, 2, 3)}, top_diagnoses=10, top_hcpcs=10,
                           min_group_size=1)
    codes, cols = list(out["row_codes"]), list(out["col_codes"])
    assert sorted(codes) == ["25000", "4019"] and sorted(cols) == ["A", "B"]
    assert list(out["labels"]) == [0, 1] and list(out["chapters"]) == [3, 6]   # sorted by group, chapter 15 dropped
    V = out["views"]
    r, c = codes.index("4019"), {k: cols.index(k) for k in "AB"}
    g = codes.index("25000")
    assert V.shape == (3, 2, 2)
    assert V[0, r, c["A"]] == 2 and V[0, r, c["B"]] == 1 and V[0, g, c["A"]] == 1 and V[0, g, c["B"]] == 1
    assert V[1, g, c["B"]] == 1 and V[1].sum() == 1
    assert V[2, r, c["A"]] == 1 and V[2, r, c["B"]] == 1 and V[2].sum() == 2
