"""One engine call per compressor, for the leaderboard's board runs (the runners `board` beside each engine).

A compressor that does not apply to a setting gets one row saying why (``board_status = "n/a: <why>"``) instead
of failing the run: its factory refuses the parameters the setting can supply (``needs_parameters``), or the
engine refuses it (the error's first line; the traceback goes to the run's log).  Every other row carries
``board_compressor`` (the registered name) and ``board_status = "ok"``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from fedrepro.registry.methods import ALTERNATIVES

# What a board runner reads beside its paper runner's PARAMETERS (fedrepro.registry.params follows this import):
# which compressors to run and the knobs that fill the parameters a setting does not give.
BOARD_KEYS = {"board_compressors": "registered|list[str]", "knobs?": {"*": "any"}}


def spec_with_knobs(name: str, knobs: Mapping[str, Any] | None) -> dict:
    """{name, <the knobs its factory takes>}, built once to check it (a ValueError/TypeError says why not).

    The knobs are the setting's budget (`k`, `ratio`, `q`, `b`, `s`, ...): a compressor takes those its factory
    names; of two alternatives (`k`, `ratio`) the first listed wins."""
    from fedrepro.comm.catalog import compressor_parameters, get_compressor

    accepted = compressor_parameters(name)
    params: dict[str, Any] = {}
    for key, value in (knobs or {}).items():
        if key in accepted and not any(a in params for a in ALTERNATIVES.get(key, ())):
            params[key] = value
    get_compressor(name, **params)
    return {"name": name, **params}


def not_applicable(name: str, why: str) -> pd.DataFrame:
    return pd.DataFrame([{"board_compressor": name, "board_status": f"n/a: {why}"}])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def run_each(compressors: Iterable[str], knobs: Mapping[str, Any] | None,
             run_one: Callable[[str, Any], pd.DataFrame], log=None, build: bool = True) -> pd.DataFrame:
    """Rows of `run_one(name, spec)` for every compressor, tagged; "n/a" rows where one does not apply.

    `build=False`: the engine fills the compressor's parameters itself (C-VFL's bits grid), so the spec is the bare
    name and only the engine can refuse it."""
    frames = []
    for name in compressors:
        try:
            spec = spec_with_knobs(name, knobs) if build else name
        except (ValueError, TypeError) as exc:
            frames.append(not_applicable(name, _first_line(exc)))
            continue
        try:
            rows = run_one(name, spec)
        except (ValueError, TypeError, RuntimeError, NotImplementedError, IndexError) as exc:
            if log is not None:
                log.warning("leaderboard: %s does not run here:\n%s", name, traceback.format_exc())
            frames.append(not_applicable(name, f"{type(exc).__name__}: {_first_line(exc)}"))
            continue
        rows = rows.copy()
        rows["board_compressor"] = name
        rows["board_status"] = "ok"
        frames.append(rows)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["board_compressor", "board_status"])
