"""C-VFL (Castiglia et al., ICML 2022): vertical-FL simulator, experiments and summaries (decisions: docs/cvfl.md).

The simulator (torch) is imported on first use only, so the artifacts (pandas + matplotlib) start fast.
"""

__all__ = ["CvflConfig", "CvflTrainer", "RunResult", "split_learning_losses"]


def __getattr__(name):
    if name in __all__:
        from fedrepro.cvfl import simulator

        return getattr(simulator, name)
    raise AttributeError(f"module 'fedrepro.cvfl' has no attribute {name!r}")
