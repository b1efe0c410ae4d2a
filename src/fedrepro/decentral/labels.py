"""Names shared by the runs and the figures (kept torch-free so the notebooks import fast)."""

METHOD_LABELS = {"squarm": "SQuARM-SGD", "squarm_noet": "SQuARM-SGD (Sign-TopK), no ET",
                 "choco_sign": "CHOCO-SGD (Sign)", "choco_topk": "CHOCO-SGD (TopK)",
                 "vanilla": "Vanilla decentralized SGD"}
CONVENTIONS = ("B32", "B64idx", "Blog")  # thesis bit-count conventions (thesis_ch3 spec §3.5)
