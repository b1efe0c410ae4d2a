"""config/leaderboard.yaml: loading, checks against the artifact registry, and the files and compressors it names.

Light on purpose (yaml and the comm registry only): the workflow reads it at DAG-build time.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from fedrepro.registry.config import ConfigError, load_yaml

FILE = "config/leaderboard.yaml"
SETTINGS = ("gcca", "cvfl", "ch3", "ch4")   # each has its function in fedrepro.leaderboard.metrics


def _own_experiments(s: dict) -> list[str]:
    own = s["own"]
    return list(own.get("experiments") or [own["experiment"]])


@dataclass
class Board:
    root: Path
    spec: dict

    @classmethod
    def load(cls, root: str | Path, registry) -> Board:
        root = Path(root)
        spec = load_yaml(root / FILE)
        problems = []
        settings = spec.get("settings") or {}
        for name in settings:
            if name not in SETTINGS:
                close = difflib.get_close_matches(name, SETTINGS, n=1)
                problems.append(f"settings.{name}: unknown setting" + (f"; did you mean {close[0]}?" if close else "")
                                + f" (settings with a metric: {', '.join(SETTINGS)})")
                continue
            s = settings[name]
            paper = s.get("paper")
            if paper not in registry.papers:
                problems.append(f"settings.{name}.paper: unknown paper {paper!r}")
                continue
            exps = registry.papers[paper]["experiments"]
            arts = registry.papers[paper]["artifacts"]
            if s.get("figure") not in arts:
                problems.append(f"settings.{name}.figure: {paper} has no artifact {s.get('figure')!r}")
            for key, names in (("own", _own_experiments(s)), ("board", s["board"]["experiments"])):
                for e in names:
                    if e not in exps:
                        close = difflib.get_close_matches(e, list(exps), n=1)
                        problems.append(f"settings.{name}.{key}: config/papers/{paper}.yaml has no experiment {e!r}"
                                        + (f"; did you mean {close[0]}?" if close else ""))
                    elif s[key]["configuration"] not in exps[e]["configurations"]:
                        problems.append(f"settings.{name}.{key}.configuration: experiment {paper}:{e} has no "
                                        f"configuration {s[key]['configuration']!r}")
        if problems:
            raise ConfigError("\n".join(f"{FILE}: {p}" for p in problems))
        return cls(root=root, spec=spec)

    @property
    def settings(self) -> dict:
        return self.spec["settings"]

    def own_compressors(self, setting: str) -> list[str]:
        return list(self.settings[setting]["own"]["methods"])

    def setting_of_board(self, paper: str, experiment: str) -> str | None:
        for name, s in self.settings.items():
            if s["paper"] == paper and experiment in s["board"]["experiments"]:
                return name
        return None

    def board_compressors(self, paper: str, experiment: str, registered: list[str]) -> list[str]:
        """What a board run puts through its engine: every registered compressor that is not the paper's own."""
        setting = self.setting_of_board(paper, experiment)
        own = set(self.own_compressors(setting)) if setting else set()
        return [c for c in registered if c not in own]

    def run_files(self, scale: str, registry) -> dict[str, list[str]]:
        """setting -> the run CSVs it reads (own first, then board), at the scale's configurations."""
        out = {}
        for name, s in self.settings.items():
            files = []
            for key, names in (("own", _own_experiments(s)), ("board", s["board"]["experiments"])):
                conf = s[key]["configuration"]
                for e in names:
                    if conf in registry.configurations(s["paper"], e, scale):
                        files.append(f"results/{scale}/{s['paper']}/runs/{e}/{conf}.csv")
            out[name] = files
        return out

    def claims_files(self, scale: str, registry) -> dict[str, str]:
        """setting -> the claims CSV of its figure (the judged claims say whether its runs reach the regime the
        paper's claims need), for the settings whose figure is built at `scale`."""
        return {name: registry.claims_file(s["paper"], s["figure"], scale) for name, s in self.settings.items()
                if scale in registry.artifact(s["paper"], s["figure"])["scales"]}

    def board_runs(self, scale: str, registry) -> list[tuple[str, str, str]]:
        """(paper, experiment, configuration) of every board run the leaderboard needs at `scale`."""
        out = []
        for s in self.settings.values():
            conf = s["board"]["configuration"]
            for e in s["board"]["experiments"]:
                if conf in registry.configurations(s["paper"], e, scale):
                    out.append((s["paper"], e, conf))
        return out

    def registries(self) -> list[str]:
        return sorted({f"config/papers/{s['paper']}.yaml" for s in self.settings.values()})


def compressor_order(board: Board, registered: list[str]) -> list[str]:
    """The leaderboard's rows: the papers' own compressors first (in the settings' order), then every other
    registered name (built-ins in registration order, then plugins)."""
    own = []
    for name in board.settings:
        for c in board.own_compressors(name):
            if c not in own:
                own.append(c)
    return own + [c for c in registered if c not in own]


def registered_compressors() -> list[str]:
    """Every registered compressor in registration order (built-ins, then plugins), then entry-point names."""
    from fedrepro.comm.catalog import COMPRESSORS, available_compressors

    names = list(COMPRESSORS)
    return names + [n for n in available_compressors() if n not in names]
