"""The artifact registry: config/papers/<paper>.yaml lists experiments, artifacts and claims.

Everything the workflow builds is derived from here; paths follow docs/architecture.md, "Paths":
  results/<scale>/<paper>/runs/<experiment>/<configuration>.csv     tidy run metrics
  results/<scale>/<paper>/{tables,figures}/<artifact>.*             the artifact (+ <artifact>.csv, its data)
  results/<scale>/<paper>/notebooks/<artifact>.{ipynb,html}         the executed notebook
  results/<scale>/<paper>/claims/<artifact>.csv                     this artifact's scorecard rows
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fedrepro.registry.config import SCALES, ConfigError, deep_merge, load_yaml, validate
from fedrepro.registry.params import check_parameters

OUTPUT_SUFFIXES = {"table": (".csv", ".md"), "figure": (".csv", ".pdf", ".png")}
ARTIFACT_DIRS = {"table": "tables", "figure": "figures"}


def _normalize(artifact_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", artifact_id.lower()).strip("_")


@dataclass
class Registry:
    root: Path
    papers: dict

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, root: str | Path = ".", check: bool = True) -> Registry:
        """Read every config/papers/*.yaml; `check=False` skips schema and cross-checks (the workflow has already
        made them when a notebook or a job reads the registry again)."""
        root = Path(root)
        schema = load_yaml(root / "workflow" / "schemas" / "paper.schema.yaml") if check else None
        papers = {}
        for path in sorted((root / "config" / "papers").glob("*.yaml")):
            reg = load_yaml(path)
            where = str(path.relative_to(root))
            if check:
                validate(reg, schema, where)
                if reg["paper"] != path.stem:
                    raise ConfigError(f"{where}: key 'paper' is {reg['paper']!r} but the file is named {path.stem}.yaml")
                _cross_check(reg, root, where)
                check_parameters(reg, root, where)  # each experiment's parameters against its runner's PARAMETERS
                _check_assumptions(reg, where)
            papers[reg["paper"]] = reg
        if check:
            _check_assumption_ids_unique(papers)
        return cls(root=root, papers=papers)

    # ---- experiments ---------------------------------------------------------------------
    def experiment(self, paper: str, exp: str) -> dict:
        return self.papers[paper]["experiments"][exp]

    def configurations(self, paper: str, exp: str, scale: str) -> list[str]:
        e = self.experiment(paper, exp)
        entry = e["scales"].get(scale)
        if entry is None:
            return []
        return list(entry.get("configurations") or e["configurations"])

    def params(self, paper: str, exp: str, configuration: str, scale: str) -> dict:
        """A configuration's parameters with the scale's overrides applied (the resolved config subset)."""
        e = self.experiment(paper, exp)
        if configuration not in e["configurations"]:
            raise ConfigError(f"config/papers/{paper}.yaml: experiment {exp!r} has no configuration {configuration!r}; "
                              f"allowed: {', '.join(e['configurations'])}")
        scale_params = (e["scales"].get(scale) or {}).get("params") or {}
        return deep_merge(e["configurations"][configuration], scale_params)

    def configuration_names(self) -> set[str]:
        """Every named configuration: those experiments run, and those an artifact derives from its runs
        (`parameters: derived:`, e.g. thesis Fig. 3.4's data splits)."""
        return {c for r in self.papers.values() for c in _configurations(r)}

    def run_spec(self, paper: str, exp: str, scale: str) -> dict:
        """How the run job of an experiment executes at a scale: runner, inputs, threads, resources, alone."""
        e = self.experiment(paper, exp)
        entry = e["scales"].get(scale) or {}
        return {"runner": e["runner"], "dataset": e.get("dataset"), "needs": dict(e.get("needs") or {}),
                "reads": dict(e.get("reads") or {}),
                "alone": bool(e.get("alone", False)), "threads": int(entry.get("threads", e.get("threads", 1))),
                "resources": {**(e.get("resources") or {}), **(entry.get("resources") or {})}}

    def run_file(self, paper: str, need: str, scale: str) -> str:
        """The run CSV named by a `needs:` value '<experiment>/<configuration>'."""
        exp, _, configuration = need.partition("/")
        return f"results/{scale}/{paper}/runs/{exp}/{configuration}.csv"

    def run_outputs(self, paper: str, exp: str, scale: str) -> list[str]:
        return [f"results/{scale}/{paper}/runs/{exp}/{c}.csv" for c in self.configurations(paper, exp, scale)]

    # ---- artifacts -----------------------------------------------------------------------
    def artifacts(self, paper: str | None = None, scale: str | None = None):
        """(paper, artifact_id, entry) for every artifact, optionally only those built at `scale`."""
        for p, reg in self.papers.items():
            if paper not in (None, p):
                continue
            for a, entry in reg["artifacts"].items():
                if scale is None or scale in entry["scales"]:
                    yield p, a, entry

    def artifact(self, paper: str, artifact: str) -> dict:
        try:
            return self.papers[paper]["artifacts"][artifact]
        except KeyError:
            raise ConfigError(f"no artifact {paper}:{artifact} in config/papers/{paper}.yaml") from None

    def artifact_files(self, paper: str, artifact: str, scale: str) -> dict[str, str]:
        entry = self.artifact(paper, artifact)
        base = f"results/{scale}/{paper}/{ARTIFACT_DIRS[entry['kind']]}/{artifact}"
        files = {suffix.lstrip("."): base + suffix for suffix in OUTPUT_SUFFIXES[entry["kind"]]}
        files["ipynb"] = f"results/{scale}/{paper}/notebooks/{artifact}.ipynb"
        files["html"] = f"results/{scale}/{paper}/notebooks/{artifact}.html"
        return files

    def notebook(self, paper: str, artifact: str) -> str:
        """The artifact's notebook: always notebooks/<paper>/<artifact>.py (jupytext percent format)."""
        self.artifact(paper, artifact)
        return f"notebooks/{paper}/{artifact}.py"

    def artifact_data(self, paper: str, artifact: str, scale: str) -> str:
        """The CSV every artifact writes beside itself: the numbers shown, which claims are computed from."""
        return self.artifact_files(paper, artifact, scale)["csv"]

    def artifact_runs(self, paper: str, artifact: str, scale: str) -> list[str]:
        entry = self.artifact(paper, artifact)
        return [f for exp in entry["experiments"] for f in self.run_outputs(paper, exp, scale)]

    def claims_file(self, paper: str, artifact: str, scale: str) -> str:
        return f"results/{scale}/{paper}/claims/{artifact}.csv"

    def resolve_artifact(self, ident: str) -> tuple[str, str]:
        """Accept 'thesis:table5.1', 'thesis:table5_1', 'thesis_table5_1' or 'thesis:Table 5.1'."""
        for sep in (":", "_"):
            paper, _, rest = ident.partition(sep)
            if paper in self.papers and rest:
                want = _normalize(rest)
                for a, entry in self.papers[paper]["artifacts"].items():
                    if want in (_normalize(a), _normalize(entry["label"])):
                        return paper, a
        known = ", ".join(f"{p}:{a}" for p, a, _ in self.artifacts())
        raise ConfigError(f"unknown artifact {ident!r}; known artifacts: {known or '(none)'}")

    # ---- assumptions ---------------------------------------------------------------------
    def assumptions(self, paper: str) -> dict:
        """id -> {statement, alternatives: {alternative: [configuration, ...]}, claims?} (may be empty)."""
        return dict(self.papers[paper].get("assumptions") or {})

    # ---- claims --------------------------------------------------------------------------
    def claims(self, paper: str, artifact: str | None = None) -> list[dict]:
        return [c for c in self.papers[paper]["claims"] if artifact in (None, c["artifact"])]

    def find_claim(self, ident: str) -> tuple[str, dict]:
        paper, _, cid = ident.partition(":")
        papers = [paper] if cid and paper in self.papers else list(self.papers)
        cid = cid if cid and paper in self.papers else ident
        for p in papers:
            for c in self.papers[p]["claims"]:
                if c["id"] == cid or cid.startswith(c["id"] + "["):
                    return p, c
        raise ConfigError(f"unknown claim {ident!r}; claim ids are listed in config/papers/<paper>.yaml under 'claims'")


def _check_runner(runner: str, root: Path, where: str, name: str) -> None:
    """The runner names a function defined in a module under src/ (checked from the source, nothing imported)."""
    import ast

    module, _, function = runner.partition(":")
    base = root / "src" / Path(*module.split("."))
    path = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
    if path is None:
        raise ConfigError(f"{where}: experiments.{name}.runner {runner!r}: no module {module} under src/ "
                          f"(expected {base.relative_to(root)}.py)")
    defined = [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)]
    if function not in defined:
        import difflib

        close = difflib.get_close_matches(function, defined, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; functions there: {', '.join(defined)}"
        raise ConfigError(f"{where}: experiments.{name}.runner {runner!r}: {path.relative_to(root)} defines no "
                          f"function {function!r}{hint}")


def _cross_check(reg: dict, root: Path, where: str) -> None:
    exps = reg["experiments"]
    for name, e in exps.items():
        _check_runner(e["runner"], root, where, name)
        for key, need in (e.get("needs") or {}).items():
            exp, _, configuration = need.partition("/")
            if exp not in exps or configuration not in exps[exp]["configurations"]:
                raise ConfigError(f"{where}: experiments.{name}.needs.{key} is {need!r}; it must name "
                                  f"<experiment>/<configuration> of this registry")
        for scale, entry in e["scales"].items():
            for c in (entry or {}).get("configurations") or []:
                if c not in e["configurations"]:
                    raise ConfigError(f"{where}: experiments.{name}.scales.{scale}.configurations names {c!r}; "
                                      f"allowed: {', '.join(e['configurations'])}")
    for name, a in reg["artifacts"].items():
        notebook = f"notebooks/{reg['paper']}/{name}.py"
        if not (root / notebook).exists():
            raise ConfigError(f"{where}: artifact {name} has no notebook {notebook}; write one (see docs/architecture.md, "
                              f"'Notebooks')")
        for exp in a["experiments"]:
            if exp not in exps:
                raise ConfigError(f"{where}: artifacts.{name}.experiments names {exp!r}; allowed: {', '.join(exps)}")
            missing = [s for s in a["scales"] if s not in exps[exp]["scales"]]
            if missing:
                raise ConfigError(f"{where}: artifact {name} is built at {missing} but experiment {exp} has no such scales")
    ids = set()
    for i, c in enumerate(reg["claims"]):
        if c["artifact"] not in reg["artifacts"]:
            raise ConfigError(f"{where}: claims[{i}] ({c['id']}).artifact is {c['artifact']!r}; "
                              f"allowed: {', '.join(reg['artifacts'])}")
        if c["id"] in ids:
            raise ConfigError(f"{where}: claim id {c['id']!r} appears twice")
        _check_claim_configurations(reg, c, where)
        ids.add(c["id"])
        need = {"cells": ("keys", "columns", "paper_table"), "value": ("column", "paper_value"), "predicate": ("expr",)}
        for key in need[c["kind"]]:
            if key not in c:
                raise ConfigError(f"{where}: claims[{i}] ({c['id']}) of kind {c['kind']} needs the key {key!r}")
        if c["kind"] == "cells":
            width = len(c["keys"]) + len(c["columns"])
            for row in c["paper_table"]:
                if len(row) != width:
                    raise ConfigError(f"{where}: claim {c['id']}: paper_table row {row} has {len(row)} numbers, "
                                      f"expected {width} ({', '.join(c['keys'] + c['columns'])})")


def _check_claim_configurations(reg: dict, claim: dict, where: str) -> None:
    """A claim's `configurations:` name configurations its artifact's runs are made under (or that the artifact
    derives): a misspelt one would select no rows and read as `not-run` in every build."""
    artifact = reg["artifacts"][claim["artifact"]]
    allowed = [c for exp in artifact["experiments"] for c in reg["experiments"][exp]["configurations"]]
    allowed += list((artifact.get("parameters") or {}).get("derived") or {})
    for name in claim.get("configurations") or []:
        if name not in allowed:
            import difflib

            close = difflib.get_close_matches(name, allowed, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"{where}: claim {claim['id']}: configurations names {name!r}, which is no configuration "
                              f"of artifact {claim['artifact']}'s experiments ({', '.join(dict.fromkeys(allowed))})"
                              f"{hint}")


def _configurations(reg: dict) -> set[str]:
    named = {c for e in reg["experiments"].values() for c in e["configurations"]}
    artifacts = (reg.get("artifacts") or {}).values()
    return named | {c for a in artifacts for c in ((a.get("parameters") or {}).get("derived") or {})}


def _check_assumptions(reg: dict, where: str) -> None:
    """Each alternative names configurations some experiment of this paper has (or an artifact derives from its
    runs: `parameters: derived: {configuration: ...}`, e.g. thesis Fig. 3.4); each listed claim exists."""
    configurations = _configurations(reg)
    claim_ids = {c["id"] for c in reg["claims"]}
    for aid, entry in (reg.get("assumptions") or {}).items():
        for alternative, configs in entry["alternatives"].items():
            for c in configs:
                if c not in configurations:
                    raise ConfigError(f"{where}: assumptions.{aid}.alternatives.{alternative} names configuration {c!r}, "
                                      f"which no experiment of this paper has; configurations: {', '.join(sorted(configurations))}")
        for c in entry.get("claims") or []:
            if c not in claim_ids:
                import difflib

                close = difflib.get_close_matches(c, claim_ids, n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"{where}: assumptions.{aid}.claims names {c!r}, which is no claim id of this paper{hint}")


def _check_assumption_ids_unique(papers: dict) -> None:
    """Assumption ids are namespaced (gcca:A-10, ch5:A-T1) so that one id means one thing across all papers."""
    seen: dict[str, str] = {}
    for paper, reg in papers.items():
        for aid in reg.get("assumptions") or {}:
            if aid in seen:
                raise ConfigError(f"assumption id {aid!r} is in config/papers/{seen[aid]}.yaml and "
                                  f"config/papers/{paper}.yaml; namespace it by paper or chapter")
            seen[aid] = paper


__all__ = ["Registry", "SCALES"]
