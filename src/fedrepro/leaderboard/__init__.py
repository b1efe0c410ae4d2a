"""The cross-paper leaderboard (config/leaderboard.yaml; docs/architecture.md, "The leaderboard").

Every compressor registered in `fedrepro.comm` (built-ins, `comm.plugins`, entry points) through each work's
comparison setting: the papers' own compressors from their figures' runs, every other one from a small board run
declared in the paper's registry (`board*` experiments, whose runners live beside the engines they drive).

  spec.py        config/leaderboard.yaml: loading, checks, which compressors each board run gets
  candidates.py  one engine call per compressor, "n/a: <why>" where one does not apply (used by the runners)
  metrics.py     each setting's number from a run CSV (the figures' own summaries)
  measure.py     δ and ω of every compressor on random vectors with an explicit seed
  board.py       the table (CSV, Markdown) and the figure
"""
