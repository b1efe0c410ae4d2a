"""Thesis ch. 4: decentralized multi-task stochastic optimization with compressed communication.

Thesis ch. 4 (Algorithms 2-3, Sec. 4.5); decisions: docs/thesis_ch4.md.  Modules:

- ``graph``        Erdős–Rényi topology, edge index arrays and the signed incidence matrix
- ``projection``   projection onto the ball X and the shrunk set X~ (bandit feedback)
- ``problems``     the QCQP (4.15) and the logistic regression (4.16) problems, pairwise constraints
- ``zeroth_order`` the two-point estimator of Algorithm 3 (smoothing ζ)
- ``algorithms``   Algorithm 2 (sample feedback), Algorithm 3 (bandit feedback), vanilla, batched over nodes
- ``reference``    the SciPy reference solver of the deterministic problem and its KKT residuals
- ``experiments``  Figs. 4.1 and 4.2: instances, the eight schemes, logging, bit savings
"""
