"""One label-and-colour table for every method and compressor of the four works.

`label(name)` and `color(name)` accept any name: one the table does not know (a user's new method or
compressor) gets its own name as label and a stable colour that no known name uses, never a KeyError.
Keys are the registry's method / compressor / scheme names, so one name means one colour in every figure.
"""

from __future__ import annotations

import hashlib

# The colorblind palette of the style file, in cycle order.
PALETTE = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
           "#56b4e9")

LABELS = {
    # thesis ch. 3 (decentral)
    "squarm": "SQuARM-SGD", "squarm_noet": "SQuARM-SGD (Sign-TopK), no ET",
    "choco_sign": "CHOCO-SGD (Sign)", "choco_topk": "CHOCO-SGD (TopK)", "vanilla": "Vanilla decentralized SGD",
    # thesis ch. 4 (mtl) schemes
    "sign": "Sign", "topk": "TopK", "sign_topk": "Sign+TopK",
    # cvfl compressors
    "none": "No compression", "scalar": "Scalar quantization", "vector": "Vector quantization",
    # gcca methods
    "altmaxvar": "AltMaxVar", "cutemaxvar": "CuteMaxVar", "mvlsa": "MVLSA",
    "cutemaxvar_q2": "CuteMaxVar (q = 2)", "cutemaxvar_q3": "CuteMaxVar (q = 3)", "cutemaxvar_q4": "CuteMaxVar (q = 4)",
    "cutemaxvar_q5": "CuteMaxVar (q = 5)",
    # fedrepro.comm built-ins (the leaderboard's rows; `identity` is drawn as `none`, see ALIASES)
    "qsgd": "QSGD", "randk": "Rand-k", "sign_randk": "Sign+Rand-k", "qsgd_topk": "QSGD+TopK",
    "qsgd_randk": "QSGD+Rand-k", "cvfl_scalar": "Scalar quantization (C-VFL)",
    "cvfl_vector": "Vector quantization (C-VFL)", "cvfl_topk_columns": "Top-k columns (C-VFL)",
    # adept methods
    "adept": "ADEPT", "baseline": "Baseline", "global_training": "Global training", "local": "Local training",
    "fedavg": "FedAvg", "fedavg_ft": "FedAvg + fine-tuning", "local_closed": "Local (closed form)",
    "global_closed": "Global (closed form)",
}

COLORS = {
    "squarm": "#d55e00", "squarm_noet": "#fbafe4", "choco_sign": "#0173b2", "choco_topk": "#029e73",
    "vanilla": "#949494",
    "sign": "#de8f05", "topk": "#029e73", "sign_topk": "#cc78bc",
    "none": "#000000", "scalar": "#0173b2", "vector": "#d55e00",
    "altmaxvar": "#0173b2", "cutemaxvar": "#de8f05", "mvlsa": "#949494",
    # gcca compression levels: q = 3 (the paper's choice) keeps CuteMaxVar's own colour
    "cutemaxvar_q2": "#cc78bc", "cutemaxvar_q3": "#de8f05", "cutemaxvar_q4": "#029e73", "cutemaxvar_q5": "#d55e00",
    "adept": "#d55e00", "baseline": "#000000", "global_training": "#0173b2", "local": "#029e73",
    "fedavg": "#0173b2", "fedavg_ft": "#0173b2", "local_closed": "#029e73", "global_closed": "#0173b2",
    # fedrepro.comm built-ins that no paper figure draws (the leaderboard's rows): one colour each, apart from the
    # papers' own (C-VFL's scalar and vector quantizers are the figures' `scalar` and `vector`, see ALIASES)
    "randk": "#56b4e9", "qsgd": "#9467bd", "sign_randk": "#ece133", "qsgd_topk": "#8c564b", "qsgd_randk": "#bcbd22",
    "cvfl_topk_columns": "#ca9161",
}

# Bit widths per embedding component (C-VFL's panels by b): b = 32 is no compression, drawn as `none` is.
BITS_COLORS = {2: "#029e73", 3: "#de8f05", 4: "#cc78bc", 32: COLORS["none"]}

# Aliases: the names some runs use for the same thing.
ALIASES = {"vanilla_dec": "vanilla", "no_compression": "none", "global": "global_training", "identity": "none"}
# Colour only: the registry's C-VFL quantizers are drawn in the colours of the figure's methods they implement.
COLOR_ALIASES = {"cvfl_scalar": "scalar", "cvfl_vector": "vector"}


def _key(name) -> str:
    key = str(name)
    return ALIASES.get(key, key)


def label(name) -> str:
    """The display label of a method or compressor; an unknown name labels itself."""
    return LABELS.get(_key(name), str(name))


# Colours for names the table does not know: the palette's and more distinct ones, less those too close to a colour
# the table uses, so a user's new compressor never takes (or nearly takes) the colour of one it is drawn beside.
EXTRA = ("#17becf", "#393b79", "#d62728", "#2ca02c", "#e7298a", "#a6761d", "#8ca252", "#fd8d3c", "#66c2a5",
         "#7f7f00", "#aec7e8")
# The least RGB distance (0-255 per channel) between a fallback colour and any colour in use: #e377c2 beside
# Sign+TopK's #cc78bc (distance 24) reads as the same pink.
MIN_DISTANCE = 60


def _rgb(hex_color: str) -> tuple[int, int, int]:
    h = hex_color.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def distance(a: str, b: str) -> float:
    """Euclidean distance of two colours in RGB (0-255 per channel)."""
    return sum((x - y) ** 2 for x, y in zip(_rgb(a), _rgb(b))) ** 0.5


def _apart(c: str, used) -> bool:
    return all(distance(c, u) >= MIN_DISTANCE for u in used)


def fallback_colors() -> tuple[str, ...]:
    """The colours an unknown name may take: none within MIN_DISTANCE of a colour of the table (or of each other)."""
    used = {c.lower() for c in (*COLORS.values(), *BITS_COLORS.values())}
    free: list[str] = []
    for c in PALETTE + EXTRA:
        if _apart(c.lower(), used | set(free)):
            free.append(c.lower())
    return tuple(free)


def _color_key(name) -> str:
    key = _key(name)
    return COLOR_ALIASES.get(key, key)


def color(name) -> str:
    """The colour of a method or compressor; an unknown name gets a colour fixed by its name, one no known name
    uses nor comes close to (`fallback_colors`)."""
    key = _color_key(name)
    if key in COLORS:
        return COLORS[key]
    free = fallback_colors()
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return free[digest % len(free)]


def colors(names) -> dict:
    """Colours for names drawn together, no two alike (nor close) while free colours remain: a known name keeps its
    own unless an earlier name here took it (the papers' tables reuse colours across works: CuteMaxVar and ch. 4's
    Sign are both orange), and every other name takes its hash-preferred free colour, or the next one apart from
    those taken (`color` alone can give two unknown names of one figure the same colour)."""
    out: dict = {}
    free = fallback_colors()
    for name in names:
        key = _color_key(name)
        if key in COLORS and COLORS[key] not in out.values():
            out[name] = COLORS[key]
            continue
        start = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(free)
        order = free[start:] + free[:start]
        out[name] = next((c for c in order if _apart(c, out.values())),
                         next((c for c in order if c not in out.values()), order[0]))
    return out


def bits_color(b) -> str:
    """The colour of a bit width b; a width the table does not know gets a palette colour fixed by its value."""
    try:
        return BITS_COLORS[int(b)]
    except (KeyError, TypeError, ValueError):
        return color(f"bits={b}")


def register(name: str, *, label_text: str | None = None, color_hex: str | None = None) -> None:
    """Give a new method or compressor its label and colour (e.g. from a plugin module)."""
    if label_text:
        LABELS[name] = label_text
    if color_hex:
        COLORS[name] = color_hex
