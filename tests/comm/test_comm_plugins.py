"""A compressor is one file: a user module registers it, the configuration names the module, nothing else changes.

The test follows docs/comm.md ("Add your own compressor"): an unbiased random-k (d/k rescaling) is written to a
temporary file, named only through `--config comm='{plugins: [...]}'` (parsed and resolved as the Snakefile does),
imported as the workflow imports it, then found by name and put through the interface checks of
test_comm_interface.py and a Monte-Carlo check of E[C(x)] = x and E||C(x) - x||² = (d/k - 1)||x||² with
tolerances z·σ/√N from the exact standard deviations (the convention of test_comm_bounds.py).
"""

from __future__ import annotations

import importlib.util
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from fedrepro.comm import RandK, TopK, available_compressors, catalog, get_compressor, register_compressor
from fedrepro.comm.plugins import PluginError, import_plugins
from fedrepro.registry.config import load_yaml, resolve_config

REPO = Path(__file__).resolve().parents[2]
ALPHA = 1e-6

# The file a user writes (docs/comm.md shows the same class).
UNBIASED_RANDK = '''
"""Random-k rescaled by d/k: E[C(x)] = x."""
from fedrepro.comm import RandK, register_compressor


@register_compressor("randk_unbiased")
class UnbiasedRandK(RandK):
    name = "randk_unbiased"
    unbiased = True

    def _select(self, x2, u):
        idx, kept = super()._select(x2, u)      # k positions from the caller's uniforms u
        d = x2.shape[1]
        return idx, kept * (d / self.k_for(d))

    def delta(self, n, x=None):
        return None                             # no delta: E||C(x) - x||^2 = (d/k - 1) ||x||^2
'''


@pytest.fixture(autouse=True)
def private_registry(monkeypatch):
    """Each test registers into its own copy of the name table (the built-in names stay as they are)."""
    monkeypatch.setattr(catalog, "COMPRESSORS", dict(catalog.COMPRESSORS))


def _interface_checks():
    path = Path(__file__).with_name("test_comm_interface.py")
    spec = importlib.util.spec_from_file_location("comm_interface_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _configure(*entries: str) -> dict:
    """What the Snakefile resolves for `snakemake --config <entries>` (Snakemake's own parser and merge)."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    overrides = parse_config(list(entries))
    base = load_yaml(REPO / "config" / "config.yaml")
    update_config(base, overrides)
    return resolve_config(base, overrides, REPO)


def _plugin_file(tmp_path: Path) -> Path:
    path = tmp_path / "unbiased_randk.py"
    path.write_text(UNBIASED_RANDK)
    return path


def test_a_compressor_registered_by_configuration_only_passes_the_interface_checks(tmp_path):
    assert "randk_unbiased" not in available_compressors()
    cfg = _configure(f"comm={{plugins: [{_plugin_file(tmp_path)}]}}")
    import_plugins(cfg["comm"]["plugins"], root=REPO)            # what common.smk and the run script do
    assert "randk_unbiased" in available_compressors()
    c = get_compressor("randk_unbiased", k=5)
    assert c.unbiased and c.name == "randk_unbiased" and isinstance(c, RandK)
    checks = _interface_checks()
    for lib in ("numpy", "torch"):
        for dtype in (np.float32, np.float64):
            checks.test_output_type_shape_dtype_and_parts("randk_unbiased", {"k": 5}, lib, dtype)
        checks.test_same_generator_same_output("randk_unbiased", {"k": 5}, lib)
        checks.test_batched_equals_per_element("randk_unbiased", {"k": 5}, lib)
    checks.test_unbatched_call_is_one_element("randk_unbiased", {"k": 5})
    out = c(np.zeros((2, 4, 6)), np.random.default_rng(0))
    assert not np.any(out.value)                                  # C(0) = 0
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        c(np.ones((2, 6)), None)                                   # its randomness is the caller's stream
    import_plugins(cfg["comm"]["plugins"], root=REPO)            # importing again changes nothing


def test_the_new_compressor_is_unbiased_with_the_stated_error(tmp_path):
    import_plugins([str(_plugin_file(tmp_path))])
    x = np.random.default_rng(3).standard_normal(40)
    x[5] = 0.0
    d, k, N = x.size, 7, 20_000
    out = get_compressor("randk_unbiased", k=k)(np.broadcast_to(x, (N, d)).copy(), np.random.default_rng(1))
    assert np.all((out.value != 0).sum(axis=1) <= k)
    # E[C(x)_j] = x_j, Var[C(x)_j] = x_j² (d/k - 1): each entry kept with probability k/d, scaled by d/k
    sd = np.abs(x) * math.sqrt(d / k - 1)
    tol = norm.isf(ALPHA / (2 * d)) * sd / math.sqrt(N)          # two-sided, Bonferroni over the d entries
    assert np.all(np.abs(out.value.mean(axis=0) - x) <= tol)
    # ||C(x) - x||² = Σw + c Σ_j w_j I_j with w = x², c = (d/k - 1)² - 1, I_j the inclusion indicators
    w, p, c = x**2, k / d, (d / k - 1) ** 2 - 1
    cov = k * (k - 1) / (d * (d - 1)) - p**2
    var = c**2 * (p * (1 - p) * (w**2).sum() + cov * (w.sum() ** 2 - (w**2).sum()))
    err = ((out.value - x) ** 2).sum(axis=1)
    assert abs(err.mean() - (d / k - 1) * w.sum()) <= norm.isf(ALPHA / 2) * math.sqrt(var / N)


def test_a_plugin_module_on_the_path_and_a_config_file_entry(tmp_path, monkeypatch):
    (tmp_path / "my_compressors_mod.py").write_text(UNBIASED_RANDK.replace("randk_unbiased", "randk_unbiased_mod"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import_plugins(["my_compressors_mod"])
    assert get_compressor("randk_unbiased_mod", ratio=0.5).name == "randk_unbiased_mod"
    root = tmp_path / "repo"
    (root / "plugins").mkdir(parents=True)
    (root / "plugins" / "rel.py").write_text(UNBIASED_RANDK.replace("randk_unbiased", "randk_unbiased_rel"))
    import_plugins(["plugins/rel.py"], root=root)                 # a file relative to the repository root
    assert "randk_unbiased_rel" in available_compressors()


def test_an_installed_package_is_found_through_its_entry_point(tmp_path, monkeypatch):
    """`[project.entry-points."fedrepro.compressors"] randk_unbiased_ep = "pkg.mod:Class"` in the package's
    pyproject: the name resolves without any configuration."""
    (tmp_path / "ep_compressors.py").write_text(
        UNBIASED_RANDK.replace('@register_compressor("randk_unbiased")\n', "").replace("randk_unbiased", "randk_unbiased_ep"))
    dist = tmp_path / "ep_compressors-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-compressors\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[fedrepro.compressors]\nrandk_unbiased_ep = ep_compressors:UnbiasedRandK\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "randk_unbiased_ep" in available_compressors()
    assert "randk_unbiased_ep" not in catalog.COMPRESSORS            # loaded on first use
    c = get_compressor("randk_unbiased_ep", k=2)
    assert c.unbiased and "randk_unbiased_ep" in catalog.COMPRESSORS


def test_registration_refuses_what_would_break_the_interface():
    class OwnRandomness(TopK):
        name = "own_randomness"

        def __call__(self, x, rng=None, **kw):      # would draw from global state: refused
            return super().__call__(x, np.random.default_rng(), **kw)

    with pytest.raises(TypeError, match="overrides __call__.*caller's generator"):
        register_compressor("own_randomness", OwnRandomness)

    class Misnamed(TopK):
        name = "topk"

    with pytest.raises(ValueError, match="set the class attribute name = 'misnamed'"):
        register_compressor("misnamed", Misnamed)
    with pytest.raises(TypeError, match="must subclass fedrepro.comm.Compressor"):
        register_compressor("plain", type("Plain", (), {}))
    with pytest.raises(ValueError, match="lower-case"):
        register_compressor("Top-K", TopK)

    class Again(TopK):
        name = "topk"

    with pytest.raises(ValueError, match="'topk' is taken"):
        register_compressor("topk", Again)
    assert register_compressor("topk", TopK) is TopK              # the same object again: a no-op
    register_compressor("not_a_compressor", lambda: object())
    with pytest.raises(TypeError, match="not a Compressor"):
        get_compressor("not_a_compressor")


def test_unknown_names_and_broken_plugins_are_named():
    with pytest.raises(ValueError, match=r"unknown compressor 'sign_topkk'; did you mean sign_topk, .*; allowed names"):
        get_compressor("sign_topkk")
    with pytest.raises(PluginError, match="comm.plugins: cannot import 'no_such_compressor_module'"):
        import_plugins(["no_such_compressor_module"])
    with pytest.raises(PluginError, match="comm.plugins: cannot import 'missing.py'.*no file"):
        import_plugins(["missing.py"], root=REPO)


def test_the_documented_recipe_is_the_tested_file():
    doc = (REPO / "docs" / "comm.md").read_text()
    body = textwrap.dedent(UNBIASED_RANDK).strip().splitlines()[1:]     # the class, without the docstring line
    assert "\n".join(body) in doc
