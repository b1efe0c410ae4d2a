"""Runner parameter declarations (fedrepro.registry.params) and the registry check made before any job runs.

Three kinds of tests: the mini-language on small specs; the registry errors of issues 16 and 18, each naming the
file, the key path and the close matches; and the declarations against the code: every key a runner reads is
declared (a static scan of the runner and the functions it passes the parameters to), every declared key is read
(or listed below with the reason), and the declared names match the engines' own tables.
"""

from __future__ import annotations

import ast
import copy
import shutil
from pathlib import Path

import pytest

from fedrepro.registry.config import ConfigError, load_yaml
from fedrepro.registry.papers import Registry
from fedrepro.registry.params import (
    RESERVED,
    AnyOf,
    Checker,
    ListOf,
    Literal,
    Mapping,
    Scalar,
    SpecError,
    check_parameters,
    compile_spec,
    declared_keys,
    describe,
    runner_spec,
)

REPO = Path(__file__).resolve().parents[1]
PAPERS = ("adept", "cvfl", "gcca", "thesis")


def _problems(value, spec, partial=False):
    checker = Checker(REPO)
    checker.check(value, compile_spec(spec), "x", partial=partial)
    return checker.problems


# ---- the mini-language ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,good,bad", [
    ("int>=1", [1, 7, 3.0], [0, -2, 2.5, "3", True, None]),
    ("float>0<=1", [0.5, 1, 1.0], [0, 1.5, "0.5", False]),
    ("float>=0", [0, float("inf")], [-1e-9]),
    ("int>=1|null", [None, 4], [0, "x"]),
    ("qcqp|logistic", ["qcqp", "logistic"], ["QCQP", 1, None]),
    ("1|2", [1, 2], [3, "1", True]),
    ("crop_flip|false", ["crop_flip", False], [True, 0, "false"]),
    ("d*r|d", ["d*r", "d"], ["r"]),
    ("bool", [True, False], [0, "true"]),
    ("str", ["", "a"], [1, None]),
    ("list[int>=1]", [[], [1, 2]], [[0], 1, "12", (1,)]),
    ("list[float, float]", [[1, 2.5]], [[1], [1, 2, 3], ["a", 1]]),
    ("list[list[int>=1, int>=1]]", [[[1, 2], [3, 4]]], [[[1, 2, 3]], [[0, 1]]]),
    ("list[a|b]", [["a", "b", "a"]], [["c"]]),
])
def test_string_specs_accept_and_refuse(spec, good, bad):
    for value in good:
        assert _problems(value, spec) == [], (spec, value)
    for value in bad:
        assert _problems(value, spec), (spec, value)


def test_mappings_optional_keys_wildcards_lists_and_alternatives():
    spec = {"kind": "a|b", "n?": "int>=0", "sub?": {"*": "float"}, "runs?": [{"b": "int"}],
            "trigger?": ("null", {"c0?": "float"})}
    assert _problems({"kind": "a", "sub": {"x": 1.0}, "runs": [{"b": 2}], "trigger": None}, spec) == []
    assert _problems({"kind": "a", "trigger": {"c0": 1}}, spec) == []
    assert [p for p, _ in _problems({"kind": "a", "trigger": {"c1": 1}}, spec)] == ["x.trigger.c1"]
    assert [p for p, _ in _problems({"kind": "a", "runs": [{"b": 1}, {"bb": 1}]}, spec)] == ["x.runs[1].bb", "x.runs[1].b"]
    assert [p for p, _ in _problems({"n": 1}, spec)] == ["x.kind"]        # required
    assert _problems({"n": 1}, spec, partial=True) == []                   # a part of a configuration
    path, message = _problems({"kind": "a", "nn": 1}, spec)[0]
    assert path == "x.nn" and "did you mean n?" in message


def test_descriptions_say_what_is_accepted():
    assert describe(compile_spec("int>=1")) == "an integer >= 1"
    assert describe(compile_spec("float>0<=1")) == "a number > 0 and <= 1"
    assert describe(compile_spec("a|b")) == "one of a, b"
    assert describe(compile_spec("int>=1|null")) == "an integer >= 1 or null"
    assert describe(compile_spec("list[float, float]")) == "a list of 2 items (a number; a number)"
    assert describe(compile_spec({"*": "float"})) == "a mapping of names to a number"
    assert isinstance(compile_spec(("null", {"a": "int"})), AnyOf)
    assert compile_spec("list[int]") == ListOf(item=compile_spec("int"))
    assert compile_spec("true") == Literal(True) and compile_spec("0.5") == Literal(0.5)


@pytest.mark.parametrize("spec", ["int>=x", "lst[int]", "a b", 3, [1, 2], {1: "int"}])
def test_malformed_specs_are_refused(spec):
    with pytest.raises(SpecError):
        compile_spec(spec)


def _runner_module(tmp_path: Path, source: str, name: str = "demo") -> Path:
    path = tmp_path / "src" / "myrunners" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return tmp_path


def test_literal_is_read_without_importing_and_may_unpack_other_literals(tmp_path):
    root = _runner_module(tmp_path, "import this_module_does_not_exist\n"
                                    "_COMMON = {'n': 'int>=1'}\n"
                                    "FIRST_PARAMETERS = {**_COMMON, 'a': 'str'}\n"
                                    "PARAMETERS = {'n': 'int>=1', 'b?': 'bool'}\n"
                                    "def first(ctx): pass\n"
                                    "def second(ctx): pass\n")
    first, second = runner_spec(root, "myrunners.demo:first"), runner_spec(root, "myrunners.demo:second")
    assert isinstance(first, Mapping) and set(first.fields) == {"n", "a"}
    assert set(second.fields) == {"n", "b"} and second.fields["b"][1]          # the module default; b optional
    assert runner_spec(root, "myrunners.nothing:run") is None


def test_a_literal_that_is_not_one_is_refused_with_the_file(tmp_path):
    root = _runner_module(tmp_path, "KINDS = 'a|b'\nPARAMETERS = {'kind': f'{KINDS}'}\ndef run(ctx): pass\n")
    reg = {"experiments": {"e": {"runner": "myrunners.demo:run", "configurations": {"c": {}}, "scales": {}}}}
    with pytest.raises(ConfigError, match=r"where: experiments\.e\.runner .*demo\.py: PARAMETERS: only literals"):
        check_parameters(reg, root, "where")


# ---- the registry check --------------------------------------------------------------------------------------

def test_every_registry_validates():
    Registry.load(REPO)       # check=True: schema, cross-checks, parameters


def test_every_runner_in_the_registries_declares_its_parameters():
    reg = Registry.load(REPO, check=False)
    runners = {e["runner"] for p in PAPERS for e in reg.papers[p]["experiments"].values()}
    assert len(runners) >= 14
    assert [r for r in sorted(runners) if runner_spec(REPO, r) is None] == []


def _thesis():
    return load_yaml(REPO / "config" / "papers" / "thesis.yaml")


def _error(reg, paper="thesis") -> str:
    with pytest.raises(ConfigError) as err:
        check_parameters(reg, REPO, f"config/papers/{paper}.yaml")
    return str(err.value)


def _set(*path):
    *keys, last, value = path

    def mutate(reg):
        node = reg["experiments"]
        for k in keys:
            node = node[k]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return mutate


_DELETE = object()

CASES = [
    # (mutation, key path in the message, what else the message says)
    (_set("fig4_1", "scales", "smoke", "params", "T_maxx", 150), "experiments.fig4_1.scales.smoke.params.T_maxx",
     "unknown parameter of fedrepro.mtl.experiments:run; did you mean T_max?"),
    (_set("table5_1", "configurations", "as-stated", "n_test", "abc"),
     "experiments.table5_1.configurations.as-stated.n_test", "expected an integer >= 1, got 'abc' (str)"),
    (_set("table5_1", "scales", "smoke", "params", "runs", -2), "experiments.table5_1.scales.smoke.params.runs",
     "expected an integer >= 1, got -2"),
    (_set("fig4_2", "configurations", "calibrated", "methods",
          {"sign_topk": {"algorithm": "compressed", "compressor": {"name": "sign_topkk", "k": 1}}}),
     "experiments.fig4_2.configurations.calibrated.methods.sign_topk.compressor",
     "unknown compressor 'sign_topkk'; did you mean sign_topk"),
    (_set("fig4_1", "configurations", "as-stated", "methods",
          {"topk": {"algorithm": "compressed", "compressor": {"name": "topk", "kk": 1}}}),
     "experiments.fig4_1.configurations.as-stated.methods.topk.compressor", "got unknown parameter(s) ['kk']"),
    (_set("fig3_4", "configurations", "as-stated", "methods", {"choco_topk": {"algorithm": "chocoo"}}),
     "experiments.fig3_4.configurations.as-stated.methods.choco_topk.algorithm",
     "unknown value 'chocoo'; did you mean choco?"),
    (_set("fig3_2", "configurations", "as-stated", "methods", {"choco_sign": {"algorithm": "choco", "gama": 0.4}}),
     "experiments.fig3_2.configurations.as-stated.methods.choco_sign.gama", "did you mean gamma?"),
    (_set("fig3_2", "scales", "smoke", "params", "lr", {"warmup_epoch": 0.5}),
     "experiments.fig3_2.scales.smoke.params.lr.warmup_epoch", "did you mean warmup_epochs?"),
    (_set("fig3_4", "configurations", "as-stated", "seed", 3), "experiments.fig3_4.configurations.as-stated.seed",
     "--config seed=N"),
    (_set("fig4_1", "configurations", "as-stated", "T", _DELETE), "experiments.fig4_1.configurations.as-stated.T",
     "missing: fedrepro.mtl.experiments:run reads it (at scale smoke, quick, paper)"),
    (_set("fig4_1", "configurations", "as-stated", "c_range", [-5.0]),
     "experiments.fig4_1.configurations.as-stated.c_range", "expected a list of 2 items"),
]


@pytest.mark.parametrize("mutate,path,says", CASES, ids=[c[1].split(".", 1)[1] for c in CASES])
def test_each_error_names_file_key_path_and_suggestion(mutate, path, says):
    reg = _thesis()
    mutate(reg)
    msg = _error(reg)
    line = next((ln for ln in msg.splitlines() if path + ":" in ln), "")
    assert line.startswith(f"config/papers/thesis.yaml: {path}: "), msg
    assert says in line, msg


def test_unschemed_run_entries_and_compressor_names_of_cvfl():
    reg = load_yaml(REPO / "config" / "papers" / "cvfl.yaml")
    reg["experiments"]["mimic"]["configurations"]["as-stated"]["compressors"] = ["none", "vectr"]
    reg["experiments"]["mimic_q"]["scales"]["quick"]["params"]["runs"][0]["epoch"] = 4
    cifar = reg["experiments"]["cifar10"]["configurations"]["as-stated"]
    cifar["methods"] = {**cifar["methods"], "vector": {"compressor": {"name": "cvfl_vectr"}, "servr": "topk"}}
    msg = _error(reg, "cvfl")
    assert ("config/papers/cvfl.yaml: experiments.mimic.configurations.as-stated.compressors[1]: unknown method "
            "'vectr'; did you mean vector?") in msg
    assert ("config/papers/cvfl.yaml: experiments.cifar10.configurations.as-stated.methods.vector.compressor: "
            "unknown compressor 'cvfl_vectr'; did you mean cvfl_vector") in msg
    assert "experiments.cifar10.configurations.as-stated.methods.vector.servr: unknown parameter" in msg
    assert "experiments.mimic_q.scales.quick.params.runs[0].epoch: unknown parameter" in msg
    assert "did you mean epochs?" in msg


def test_every_problem_of_a_file_is_reported_at_once():
    reg = _thesis()
    for mutate, *_ in CASES[:4]:
        mutate(reg)
    msg = _error(reg)
    assert all(path in msg for _, path, _ in CASES[:4])


def test_registry_load_runs_the_check(tmp_path):
    """The hook: Registry.load(check=True) refuses the misspelled T_max of issue 16 before any job is built."""
    for part in ("workflow/schemas", "notebooks", "src"):
        (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / part).symlink_to(REPO / part)
    shutil.copytree(REPO / "config", tmp_path / "config")
    reg = tmp_path / "config" / "papers" / "thesis.yaml"
    text = reg.read_text()
    assert text.count("{n: 10, p: 0.5, T_max: 150, n_log: 40}") == 1
    reg.write_text(text.replace("{n: 10, p: 0.5, T_max: 150, n_log: 40}", "{n: 10, p: 0.5, T_maxx: 150, n_log: 40}"))
    with pytest.raises(ConfigError, match=r"config/papers/thesis.yaml: experiments\.fig4_1\.scales\.smoke\.params\."
                                          r"T_maxx: unknown parameter .*did you mean T_max\?"):
        Registry.load(tmp_path)
    Registry.load(tmp_path, check=False)      # notebooks and jobs read it again without the check


# ---- compressor-typed parameters (methods as data) --------------------------------------------------------------

PLUGIN = '''
from fedrepro.comm import RandK, register_compressor


@register_compressor("demo_randk")
class DemoRandK(RandK):
    name = "demo_randk"
'''


def test_compressor_parameters_are_built_from_the_comm_registry_and_plugins(tmp_path, monkeypatch):
    from fedrepro.comm import catalog

    monkeypatch.setattr(catalog, "COMPRESSORS", dict(catalog.COMPRESSORS))
    root = _runner_module(tmp_path, "PARAMETERS = {'codec': 'compressor', 'others?': 'list[compressor]'}\n"
                                    "def run(ctx): pass\n")
    (root / "plugins").mkdir()
    (root / "plugins" / "demo_randk.py").write_text(PLUGIN)
    (root / "config").mkdir()
    (root / "config" / "config.yaml").write_text("comm:\n  plugins: [plugins/demo_randk.py]\n")

    def reg(codec, others=()):
        conf = {"codec": codec, "others": list(others)}
        return {"experiments": {"e": {"runner": "myrunners.demo:run", "configurations": {"c": conf},
                                      "scales": {"smoke": {}}}}}

    check_parameters(reg({"name": "topk", "k": 10}, ["sign", {"name": "qsgd", "s": 4}]), root, "f.yaml")
    check_parameters(reg({"name": "demo_randk", "k": 3}), root, "f.yaml")  # registered by config/config.yaml only
    assert "demo_randk" in catalog.COMPRESSORS
    with pytest.raises(ConfigError, match=r"f.yaml: experiments\.e\.configurations\.c\.codec: unknown compressor "
                                          r"'topkk'; did you mean topk"):
        check_parameters(reg("topkk"), root, "f.yaml")
    with pytest.raises(ConfigError, match=r"codec: topk: parameter 'k' must be an integer >= 1; got 0"):
        check_parameters(reg({"name": "topk", "k": 0}), root, "f.yaml")
    with pytest.raises(ConfigError, match=r"others\[0\]: compressor 'sign' got unknown parameter"):
        check_parameters(reg("identity", [{"name": "sign", "k": 2}]), root, "f.yaml")


# ---- the declarations against the code -----------------------------------------------------------------------

# Where each runner reads its parameters: (module, function, {expression holding parameters: declared key prefix}).
# A key read as `<expr>["key"]` or `<expr>.get("key", ...)` must be declared under that prefix.
_P = {"params": "", "p": "", "ctx.params": ""}
READS = {
    "fedrepro.mtl.experiments:run": [("fedrepro.mtl.experiments", f, _P)
                                     for f in ("build_instance", "iterations", "run_experiment", "run")],
    "fedrepro.decentral.experiments:run": [
        *[("fedrepro.decentral.experiments", f, {**_P, "params['trigger']": "trigger."})
          for f in ("build_engine", "tune_gamma", "run_method", "run_experiment", "make_task_factory",
                    "_image_folder_factory", "prepare_params", "calibrate_trigger", "run")],
        *[("fedrepro.decentral.splits", f, _P) for f in ("loops", "tune_steps", "total_steps", "max_blocks")],
        ("fedrepro.decentral.schedules", "make_lr", {"spec": "lr."}),
        ("fedrepro.decentral.schedules", "make_threshold", {"spec": "trigger."})],
    "fedrepro.cvfl.experiments:run": [("fedrepro.cvfl.experiments", f, {**_P, "run": "runs[]."})
                                      for f in ("load_vertical", "load_quadrant_images", "batch_sources",
                                                "make_parties", "run_one", "run_experiment", "run")]
                                     + [("fedrepro.cvfl.splits", "expand_grid", {**_P, "run": "runs[]."})],
    "fedrepro.cvfl.costcheck:run": [
        ("fedrepro.cvfl.costcheck", "cost_rows", {**_P, "entry": "costs[].", "setup": "setups.*."}),
        ("fedrepro.cvfl.costcheck", "time_rows", {**_P, "t": "times.", "setup": "setups.*."}),
        ("fedrepro.cvfl.costcheck", "epoch_cost", {"setup": "setups.*."}),
        ("fedrepro.cvfl.costcheck", "batches_per_epoch", {"setup": "setups.*."})],
    "fedrepro.gcca.experiments:run": [("fedrepro.gcca.experiments", f, {**_P, "v": "variants[]."})
                                      for f in ("_views", "run_experiment", "run")],
    "fedrepro.gcca.compression_illustration:run": [("fedrepro.gcca.compression_illustration", f, _P)
                                                   for f in ("illustrate", "run")],
    "fedrepro.gcca.europarl:run": [("fedrepro.gcca.europarl", f, _P) for f in ("run_europarl", "run")],
    "fedrepro.gcca.deep_experiments:deep_toy": [("fedrepro.gcca.deep_experiments", f, _P)
                                                for f in ("_cfg", "_methods", "run_deep_toy", "deep_toy")],
    "fedrepro.gcca.deep_experiments:ehr": [("fedrepro.gcca.deep_experiments", f, _P)
                                           for f in ("_cfg", "_methods", "run_ehr", "ehr")],
    "fedrepro.transfer.table5_1:run": [("fedrepro.transfer.table5_1", "from_dict", {"cfg": "", "vals": ""}),
                                       ("fedrepro.transfer.table5_1", "fields of Table51Config", {})],
    "fedrepro.adept.pca:run": [("fedrepro.adept.pca", "run_fig2", _P)],
    "fedrepro.adept.ae:table1": [("fedrepro.adept.ae", f, _P) for f in ("fed_config", "run_method", "run_table1")],
    "fedrepro.adept.ae:table2": [("fedrepro.adept.ae", f, _P) for f in ("fed_config", "run_method", "run_table2")],
    "fedrepro.adept.dgm:table3": [("fedrepro.adept.dgm", f, _P) for f in ("feature_extractor", "run_table3")],
    "fedrepro.adept.dgm:featnet": [("fedrepro.adept.dgm", f, _P) for f in ("train_featnet", "featnet")],
}
# the leaderboard's board runners (config/leaderboard.yaml) pass their parameters on to the module's `run`
for _runner in ("fedrepro.gcca.experiments", "fedrepro.cvfl.experiments", "fedrepro.decentral.experiments",
                "fedrepro.mtl.experiments"):
    READS[f"{_runner}:board"] = [*READS[f"{_runner}:run"], (_runner, "board", _P)]

# Declared keys no scanned function reads by name, and why they are declared.
_METHODS = {"methods": "read by fedrepro.registry.methods.methods_of"}
NOT_READ_BY_NAME = {
    "fedrepro.mtl.experiments:run": {"tau": "the figure's target gap: fedrepro.mtl.artifacts reads the run params",
                                     **_METHODS},
    "fedrepro.decentral.experiments:run": {**_METHODS,
        "target": "recorded only (the artifact's parameters hold the target)",
        "link_rate": "recorded only (fedrepro.decentral.linkmodel's constant)",
        "tau_oh": "recorded only (fedrepro.decentral.linkmodel's constant)"},
    "fedrepro.cvfl.experiments:run": {**{k: "a default of every run, read as p.get(k) in a loop over names"
                                         for k in ("Q", "M", "alg", "epochs")}, **_METHODS},
    "fedrepro.adept.pca:run": {k: "read as params[k] in a loop over names" for k in ("d", "r", "m", "n")},

}

for _runner in ("fedrepro.gcca.experiments", "fedrepro.cvfl.experiments", "fedrepro.decentral.experiments",
                "fedrepro.mtl.experiments"):
    NOT_READ_BY_NAME[f"{_runner}:board"] = dict(NOT_READ_BY_NAME.get(f"{_runner}:run", {}))


def _function(tree: ast.Module, name: str) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    raise AssertionError(f"no function {name}: update READS in this test")


def _reads(module: str, function: str, holders: dict[str, str]) -> set[str]:
    """Key paths read by name in one function: holder["key"] and holder.get("key", ...) (the workflow's `seed`
    left out); "fields of <Class>": the fields of a dataclass that takes the parameters as keyword arguments."""
    path = REPO / "src" / Path(*module.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text())
    if function.startswith("fields of "):
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == function.split()[-1])
        return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)} - {"extra", "seed"}
    out = set()
    for node in ast.walk(_function(tree, function)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            holder, key = node.value, node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            holder, key = node.func.value, node.args[0].value
        else:
            continue
        prefix = holders.get(ast.unparse(holder))
        if prefix is not None and isinstance(key, str) and prefix + key not in RESERVED:
            out.add(prefix + key)
    return out


@pytest.mark.parametrize("runner", sorted(READS))
def test_every_key_a_runner_reads_is_declared(runner):
    spec = runner_spec(REPO, runner)
    read = set().union(*(_reads(*where) for where in READS[runner]))
    assert read, "the scan found nothing: update READS"
    assert sorted(read - declared_keys(spec)) == []


@pytest.mark.parametrize("runner", sorted(READS))
def test_every_declared_key_is_read(runner):
    spec = runner_spec(REPO, runner)
    read = set().union(*(_reads(*where) for where in READS[runner]))
    unread = {k for k in spec.fields if k not in read}
    assert sorted(unread - set(NOT_READ_BY_NAME.get(runner, {}))) == []


def test_every_registry_runner_is_scanned():
    reg = Registry.load(REPO, check=False)
    runners = {e["runner"] for p in PAPERS for e in reg.papers[p]["experiments"].values()}
    assert runners <= set(READS)


def _words(node) -> set:
    """The literal values a (list of) choice spec accepts."""
    if isinstance(node, ListOf):
        return _words(node.item)
    if isinstance(node, AnyOf):
        return {o.value for o in node.options if isinstance(o, Literal)}
    return {node.value} if isinstance(node, Literal) else set()


def test_declared_names_match_the_engines_tables():
    """Algorithms are code (each engine's table); compressors are data: any fedrepro.comm name, never a word list."""
    from fedrepro.decentral.engine import ALGORITHMS as DECENTRAL
    from fedrepro.mtl.experiments import ALGORITHMS as MTL
    from fedrepro.mtl.experiments import FEEDBACKS
    from fedrepro.transfer.table5_1 import Table51Config

    dec = runner_spec(REPO, "fedrepro.decentral.experiments:run").fields["methods"][0].wildcard.fields
    assert _words(dec["algorithm"][0]) == set(DECENTRAL) and dec["compressor"][0] == Scalar("compressor")
    mtl = runner_spec(REPO, "fedrepro.mtl.experiments:run").fields
    assert _words(mtl["methods"][0].wildcard.fields["algorithm"][0]) == set(MTL)
    assert _words(mtl["feedbacks"][0]) == set(FEEDBACKS)
    cvfl = runner_spec(REPO, "fedrepro.cvfl.experiments:run").fields["methods"][0].wildcard.fields
    assert cvfl["compressor"][0] == cvfl["server"][0] == Scalar("partial_compressor")
    t51 = runner_spec(REPO, "fedrepro.transfer.table5_1:run").fields
    assert set(t51) == set(Table51Config.__dataclass_fields__) - {"extra", "seed"}


def test_the_declarations_accept_each_registrys_resolved_params():
    """What the run rule passes (Registry.params at every scale a configuration runs) passes the check whole."""
    reg = Registry.load(REPO, check=False)
    checked = 0
    for paper in PAPERS:
        for exp, e in reg.papers[paper]["experiments"].items():
            spec = runner_spec(REPO, e["runner"])
            for scale in e["scales"]:
                for conf in reg.configurations(paper, exp, scale):
                    checker = Checker(REPO)
                    assert checker.check(copy.deepcopy(reg.params(paper, exp, conf, scale)), spec, exp), \
                        checker.problems
                    checked += 1
    assert checked > 40
