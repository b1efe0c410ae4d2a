"""Linear federated MAX-VAR GCCA (Shrestha & Fu): CuteMaxVar, AltMaxVar, MVLSA and the exact optimum.

Paper: Shrestha & Fu, Secs. II-III and V-A; decisions: docs/gcca.md.  Modules:

- ``views``       dense (I, J, N) stacks and lists of scipy.sparse views, with their Gram eigensystems
- ``objective``   the MAX-VAR cost f = sum_i 1/2 ||X_i Q_i - G||_F^2 and the polar (Procrustes) G-step
- ``optimum``     v* and G_opt: dense eigh of P = sum_i X_i X_i^+, Lanczos on the implicit P for sparse views
- ``mvlsa``       MVLSA (Rastogi et al.): warm start and baseline
- ``engine``      Algorithm 1 (CuteMaxVar); AltMaxVar is the same engine with the identity compressor
- ``generators``  X_i = Z A_i + nu E_i, dense and sparse (density rho)
- ``experiments`` the runs behind Figs. 3-8 and Table I (tidy long rows)
"""
