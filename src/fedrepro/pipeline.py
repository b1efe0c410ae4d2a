"""What every workflow script does around its call into the library: logging, threads, sidecars.

Takes the `snakemake` object that Snakemake's `script:` directive provides (duck-typed: this
package never imports Snakemake).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from fedrepro.provenance.sidecar import now_iso, write_sidecars
from fedrepro.provenance.verify import verify_inputs
from fedrepro.runtime import choose_device, device_description, limit_threads


@dataclass
class RuleRun:
    sm: object
    started: str = field(default_factory=now_iso)
    device: str = "cpu"

    @property
    def log(self) -> logging.Logger:
        return logging.getLogger("fedrepro")

    def progress(self, iterable, **kw):
        """tqdm into the rule's log (stderr is redirected there), at most every 2 s."""
        return tqdm(iterable, file=sys.stderr, mininterval=2.0, **kw)

    def sidecars(self, outputs, *, inputs=(), config=None, seeds=None, data=None, extra=None):
        return write_sidecars(outputs, rule=self.sm.rule, inputs=inputs, config=config, seeds=seeds,
                              started=self.started, device=device_description(self.device), data=data, extra=extra)


@contextlib.contextmanager
def rule_run(sm, use_torch_device: bool = False, inputs=None):
    """Redirect output to the rule's log, cap threads, pick the device; yields a RuleRun.

    `inputs` (e.g. ``sm.input``): checked with `verify_inputs` first, so a job never reads a file whose bytes
    changed since its sidecar was written (the error names the file, both hashes and the rebuild command).
    """
    log_path = Path(sm.log[0]) if len(sm.log) else None
    stream = open(log_path, "w") if log_path else None
    old_out, old_err = sys.stdout, sys.stderr
    if stream:
        sys.stdout = sys.stderr = stream
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True)
    try:
        if inputs is not None:
            verify_inputs(inputs)
        limit_threads(sm.threads)
        run = RuleRun(sm)
        if use_torch_device:
            run.device = choose_device(sm.config.get("device", "auto"))
        run.log.info("rule %s started on %s with %d thread(s)", sm.rule, device_description(run.device), sm.threads)
        yield run
        run.log.info("rule %s finished", sm.rule)
    except BaseException:
        logging.getLogger("fedrepro").exception("rule %s failed", sm.rule)
        raise
    finally:
        sys.stdout, sys.stderr = old_out, old_err
        if stream:
            stream.close()
