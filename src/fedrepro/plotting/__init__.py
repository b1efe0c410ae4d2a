"""Plot and table helpers shared by every artifact: one style, one label-and-colour table."""

from fedrepro.plotting.names import bits_color, color, colors, label
from fedrepro.plotting.style import apply_style, save_figure
from fedrepro.plotting.tables import markdown_table

__all__ = ["apply_style", "bits_color", "color", "colors", "label", "markdown_table", "save_figure"]
