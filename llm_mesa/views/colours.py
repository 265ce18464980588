"""The colours a page draws a state in, from what the state is (``llm_mesa.Scale``).

Categories get the game's palette first, a state named like a colour that colour, then
distinct colours (ten, ten paler, then hues spread around the wheel: no two categories
share one however many there are), listed in a sorted legend. Ordered values run light
to dark. Numbers sit on a continuous scale (viridis, dark to pale) with a legend bar.
Every fill comes with the ink that stays readable on it (dark on pale fills, white on
dark ones), so a node's number can always be read.
"""

from __future__ import annotations

import colorsys
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llm_mesa.game_types import Scale, categorical, infer_scale

#: states that name a colour are drawn in it (tab10's shade of it, where it has one)
NAMED_COLOURS = {"blue": "#1f77b4", "orange": "#ff7f0e", "green": "#2ca02c", "red": "#d62728", "purple": "#9467bd",
                 "brown": "#8c564b", "pink": "#e377c2", "grey": "#7f7f7f", "gray": "#7f7f7f", "yellow": "#bcbd22",
                 "cyan": "#17becf", "black": "#252525", "white": "#f4f4f4"}
#: the category colours, in order: matplotlib's tab10, then tab20's paler partners
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
PALE = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")
#: light to dark, for ordered values (Vega's "blues" scheme at five stops)
SEQUENTIAL = ("#deebf7", "#9ecae1", "#4292c6", "#08519c", "#08306b")
#: the continuous scheme (Vega's built-in "viridis"), sampled for choosing ink; the page draws Vega's own
VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725")
CONTINUOUS_SCHEME = "viridis"
#: a place without an agent (an empty grid cell, a node nobody holds)
EMPTY = "#e8e8e8"
DARK_INK, LIGHT_INK = "#111111", "#ffffff"


def _rgb(colour: str) -> tuple[float, float, float]:
    text = colour.lstrip("#")
    if len(text) == 3:
        text = "".join(c * 2 for c in text)
    return tuple(int(text[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def _hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{round(max(0.0, min(1.0, c)) * 255):02x}" for c in rgb)


@functools.lru_cache(maxsize=4096)
def luminance(colour: str) -> float:
    """WCAG relative luminance of a ``#rrggbb`` colour (0 black .. 1 white)."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@functools.lru_cache(maxsize=4096)
def ink(fill: str) -> str:
    """The text colour readable on ``fill``: the one of dark and white with the higher contrast."""
    light = luminance(fill)
    dark_contrast = (light + 0.05) / (luminance(DARK_INK) + 0.05)
    white_contrast = 1.05 / (light + 0.05)
    return DARK_INK if dark_contrast >= white_contrast else LIGHT_INK


def ramp(stops: Sequence[str], t: float) -> str:
    """The colour at ``t`` (0..1) along ``stops``, interpolated in RGB."""
    t = max(0.0, min(1.0, float(t)))
    position = t * (len(stops) - 1)
    low = min(int(position), len(stops) - 2)
    a, b = _rgb(stops[low]), _rgb(stops[low + 1])
    f = position - low
    return _hex([x + (y - x) * f for x, y in zip(a, b)])


def distinct(count: int) -> list[str]:
    """``count`` distinct colours: tab10, its paler partners, then hues spread by the golden angle."""
    out = list(PALETTE + PALE)[:count]
    hue = 0.0
    while len(out) < count:
        hue = (hue + 0.618033988749895) % 1.0
        lightness = (0.42, 0.58, 0.34, 0.68)[len(out) % 4]
        out.append(_hex(colorsys.hls_to_rgb(hue, lightness, 0.62)))
    return out


def natural_key(value: Any) -> tuple:
    """Sort key of a category: numbers by value, then text by its words and embedded numbers (C2 before C10)."""
    if isinstance(value, bool):
        return (0, float(value), ())
    if isinstance(value, (int, float)):
        return (0, float(value), ())
    parts = re.split(r"(\d+)", str(value).lower())
    return (1, 0.0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p))


def category_colours(values: Iterable[Any], palette: Mapping[Any, str] | None = None,
                     order: Sequence[Any] = ()) -> dict[Any, str]:
    """Each category with its colour, in legend order (``order`` first, then the rest sorted).

    The game's ``palette`` first, then a category named like a colour in that colour, then
    distinct colours none of those took.
    """
    palette = dict(palette or {})
    seen = list(dict.fromkeys(values))
    listed = [v for v in order if v in seen or v in palette] + sorted((v for v in seen if v not in order),
                                                                      key=natural_key)
    listed = list(dict.fromkeys(listed))
    named = {v: NAMED_COLOURS[str(v).lower()] for v in listed
             if v not in palette and str(v).lower() in NAMED_COLOURS}
    taken = {*palette.values(), *named.values()}
    free = [c for c in distinct(len(listed) + len(taken)) if c not in taken]
    out = {}
    for value in listed:
        out[value] = palette.get(value) or named.get(value) or free.pop(0)
    return out


def ordinal_colours(values: Sequence[Any]) -> dict[Any, str]:
    """Ordered values light to dark (a single value in the middle of the ramp)."""
    count = len(values)
    return {v: ramp(SEQUENTIAL, i / (count - 1) if count > 1 else 0.5) for i, v in enumerate(values)}


def state_scale(declared: Scale | None, values: Iterable[Any]) -> Scale:
    """What a state is: as declared, else read from its values (yes/no values are two categories)."""
    if declared is not None:
        return declared
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return categorical(False, True)
    return infer_scale("state", present)


def features_colour(state: Sequence[float], low: float, high: float) -> str:
    """A colour for a state of several features in which near states get near colours: the features dealt in turn
    to red, green and blue, each channel the mean of its features' places between ``low`` and ``high`` (identical
    states alike; one feature apart, one channel a step apart)."""
    span = (high - low) or 1.0
    channels: list[list[float]] = [[], [], []]
    for i, value in enumerate(state):
        channels[i % 3].append((float(value) - low) / span)
    levels = [sum(c) / len(c) if c else 0.5 for c in channels]
    return _hex([0.12 + 0.76 * min(max(level, 0.0), 1.0) for level in levels])


def numeric_domain(scale: Scale, values: Iterable[Any], seen: Sequence[float] | None = None) -> tuple[float, float]:
    """The range a continuous scale spans: the declared one, else what was seen (``seen`` keeps it from
    shrinking between rounds), never empty."""
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if seen:
        numbers += list(seen)
    declared_low, declared_high = scale.bounds()  # a bound named after a parameter is read from the values
    low = declared_low if declared_low is not None else min(numbers, default=0.0)
    high = declared_high if declared_high is not None else max(numbers, default=1.0)
    if high <= low:
        high = low + 1.0
    return float(low), float(high)


def numeric_fill(value: float, domain: tuple[float, float]) -> str:
    """The continuous scheme's colour of ``value`` (an approximation of what the browser draws, for ink)."""
    low, high = domain
    return ramp(VIRIDIS, (float(value) - low) / (high - low))


__all__ = ["CONTINUOUS_SCHEME", "EMPTY", "NAMED_COLOURS", "PALE", "PALETTE", "SEQUENTIAL", "VIRIDIS", "category_colours",
           "distinct", "features_colour", "ink", "luminance", "natural_key", "numeric_domain", "numeric_fill", "ordinal_colours", "ramp",
           "state_scale"]
