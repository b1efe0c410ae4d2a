"""Plot and table helpers shared by every notebook, with one seaborn style."""

from fedrepro.plotting.style import apply_style, save_figure
from fedrepro.plotting.tables import markdown_table

__all__ = ["apply_style", "markdown_table", "save_figure"]
