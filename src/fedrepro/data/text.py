"""Parallel text: the Europarl v7 10-language alignment (gcca A-27) and the Django-catalog stand-in.

Both produce the same layout: per language a packed UTF-8 blob + offsets (row r of every language is
the same sentence), and a split vector (0 train, 1 test, -1 unused).
"""

from __future__ import annotations

import ast
import logging
import re
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from fedrepro.data.formats import pack_strings
from fedrepro.runtime import rng_stream

log = logging.getLogger("fedrepro.data")


def parallel_arrays(texts: dict, split: np.ndarray) -> dict:
    """{lang: [str]} (row-aligned) -> the npz layout."""
    langs = list(texts)
    n = {len(v) for v in texts.values()}
    assert len(n) == 1, "parallel texts must have the same number of rows in every language"
    out = {"languages": np.array(langs), "split": np.asarray(split, dtype=np.int8)}
    for lang, rows in texts.items():
        out[f"text_{lang}"], out[f"offsets_{lang}"] = pack_strings(rows)
    return out


# ---- Europarl ------------------------------------------------------------------------------------------

def _pair_lines(tgz: Path, lang: str) -> tuple[list[str], list[str]]:
    """(English lines, `lang` lines) of europarl-v7.<lang>-en.{en,<lang>} inside <lang>-en.tgz."""
    with tarfile.open(tgz, "r:gz") as tar:
        members = {Path(m.name).name: m for m in tar if m.isfile()}
        read = lambda suffix: tar.extractfile(members[f"europarl-v7.{lang}-en.{suffix}"]).read().decode("utf-8", "replace").split("\n")
        en, xx = read("en"), read(lang)
    if len(en) != len(xx):
        raise ValueError(f"{tgz.name}: {len(en)} English lines but {len(xx)} {lang} lines")
    return en, xx


def align_europarl(archives: dict, languages, n_train: int = 160_000, n_test: int = 10_000, seed: int = 0) -> dict:
    """gcca A-27: keep English sentences present, non-empty and unique, in every xx-en pair; one row each.

    Rows are ordered by English text, then permuted with rng_stream(seed, 'europarl'); the first n_train
    rows are train and the next n_test test (fewer if the intersection is smaller).
    """
    import pandas as pd

    pivot, others = languages[0], list(languages[1:])
    table = None
    for lang in others:
        en, xx = _pair_lines(Path(archives[f"{lang}-en.tgz"]), lang)
        df = pd.DataFrame({pivot: en, lang: xx})
        df = df[(df[pivot].str.strip() != "") & (df[lang].str.strip() != "")]
        df = df.drop_duplicates(subset=pivot, keep=False)          # an English line seen twice is ambiguous
        table = df if table is None else table.merge(df, on=pivot, how="inner")
        log.info("europarl: after %s-en, %d aligned sentences", lang, len(table))
    table = table.sort_values(pivot, kind="stable").reset_index(drop=True)
    table = table.iloc[rng_stream(seed, "europarl").permutation(len(table))]
    texts = {lang: table[lang].tolist() for lang in languages}
    split = np.full(len(table), -1, dtype=np.int8)
    split[:n_train] = 0
    split[n_train:n_train + n_test] = 1
    return parallel_arrays(texts, split)


# ---- Django gettext catalogs (stand-in) ----------------------------------------------------------------

_PO_KEY = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)\s+(".*")\s*$')


def parse_po(text: str) -> dict:
    """{(msgctxt, msgid): msgstr} of the translated, non-fuzzy, singular entries of a .po catalog."""
    entries, cur, key, fuzzy = {}, {}, None, False

    def flush():
        nonlocal cur, fuzzy
        if cur.get("msgid") and cur.get("msgstr") and "msgid_plural" not in cur and not fuzzy:
            entries[(cur.get("msgctxt", ""), cur["msgid"])] = cur["msgstr"]
        cur, fuzzy = {}, False

    for line in text.splitlines():
        line = line.strip()
        if not line:
            flush()
            key = None
        elif line.startswith("#,") and "fuzzy" in line:
            fuzzy = True
        elif line.startswith("#"):
            continue
        elif m := _PO_KEY.match(line):
            if m[1] in ("msgctxt", "msgid") and "msgstr" in cur:
                flush()
            key = m[1]
            cur[key] = ast.literal_eval(m[2])
        elif line.startswith('"') and key:
            cur[key] += ast.literal_eval(line)
    flush()
    return entries


def django_parallel_texts(wheel: Path, languages) -> dict:
    """Row-aligned real translations: every Django catalog message translated into all languages[1:]
    (languages[0] is English, the msgid).  Rows sorted by (context, English) for a stable order."""
    pivot, others = languages[0], list(languages[1:])
    per_lang: dict = {lang: {} for lang in others}
    pat = re.compile(r"^django/(?:.*/)?locale/([A-Za-z_]+)/LC_MESSAGES/django\.po$")
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            m = pat.match(name)
            if m and m[1] in per_lang:
                app = name.split("/locale/")[0]
                for (ctx, msgid), msgstr in parse_po(z.read(name).decode("utf-8")).items():
                    per_lang[m[1]][(app, ctx, msgid)] = msgstr
    common = set.intersection(*(set(d) for d in per_lang.values()))
    # one row per English string (the same msgid in two apps would be a duplicate row)
    by_en: dict = {}
    for key in sorted(common):
        by_en.setdefault(key[2], key)
    keys = [by_en[e] for e in sorted(by_en)]
    return {pivot: [k[2] for k in keys], **{lang: [per_lang[lang][k] for k in keys] for lang in others}}
