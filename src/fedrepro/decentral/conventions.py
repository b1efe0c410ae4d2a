"""The thesis' bit-count conventions of ch. 3 (spec §3.5); torch-free so the figure code imports fast."""

CONVENTIONS = ("B32", "B64idx", "Blog")
