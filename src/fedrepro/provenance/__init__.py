"""Hashing, provenance sidecars (<file>.prov.json) and the audit walk back to the raw inputs."""

from fedrepro.provenance.hashing import hash_config, hash_tree, sha256_file
from fedrepro.provenance.sidecar import SIDECAR_SUFFIX, read_sidecar, sidecar_path, write_sidecars
from fedrepro.provenance.verify import Drift, InputDrift, find_drift, is_generated, verify_inputs

__all__ = ["SIDECAR_SUFFIX", "Drift", "InputDrift", "find_drift", "hash_config", "hash_tree", "is_generated",
           "read_sidecar", "sha256_file", "sidecar_path", "verify_inputs", "write_sidecars"]
