"""Hashing, provenance sidecars (<file>.prov.json) and the audit walk back to the raw inputs."""

from fedrepro.provenance.hashing import hash_config, hash_tree, sha256_file
from fedrepro.provenance.sidecar import SIDECAR_SUFFIX, read_sidecar, sidecar_path, write_sidecars

__all__ = ["SIDECAR_SUFFIX", "hash_config", "hash_tree", "read_sidecar", "sha256_file", "sidecar_path", "write_sidecars"]
