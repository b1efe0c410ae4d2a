"""C-VFL (Castiglia et al., ICML 2022): vertical-FL simulator, experiments and summaries (shared/specs/cvfl.md)."""

from .simulator import CvflConfig, CvflTrainer, RunResult, split_learning_losses

__all__ = ["CvflConfig", "CvflTrainer", "RunResult", "split_learning_losses"]
