"""Thesis ch. 4: decentralized multi-task stochastic optimization with compressed communication.

Spec: shared/specs/thesis_ch4_ch5.md PART I.  Modules:

- ``graph``        Erdős–Rényi topology, edge index arrays and the signed incidence matrix
- ``projection``   projection onto the ball X and the shrunk set X~ (bandit feedback)
- ``problems``     the QCQP (4.15) and the logistic regression (4.16) problems, pairwise constraints
- ``zeroth_order`` the two-point estimator of Algorithm 3 (smoothing ζ)
- ``algorithms``   Algorithm 2 (sample feedback), Algorithm 3 (bandit feedback), vanilla, batched over nodes
- ``reference``    the SciPy reference solver of the deterministic problem and its KKT residuals
- ``experiments``  Figs. 4.1 and 4.2: instances, the eight schemes, logging, bit savings
"""

from fedrepro.lazy import lazy_getattr

# Names resolve lazily (PEP 562): importing one module of the package does not import the others, so start-up
# stays fast and a job's code dependencies (derived from imports) stay the modules it really uses.
_EXPORTS = {
    "Graph": "fedrepro.mtl.graph",
    "LogisticProblem": "fedrepro.mtl.problems",
    "QCQPProblem": "fedrepro.mtl.problems",
    "RunResult": "fedrepro.mtl.algorithms",
    "erdos_renyi_connected": "fedrepro.mtl.graph",
    "project_ball": "fedrepro.mtl.projection",
    "project_shrunk": "fedrepro.mtl.projection",
    "run_scheme": "fedrepro.mtl.algorithms",
    "sphere_directions": "fedrepro.mtl.zeroth_order",
    "two_point_estimate": "fedrepro.mtl.zeroth_order",
}

__getattr__ = lazy_getattr(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
