"""How a figure becomes PNG bytes: the one place that sets up matplotlib.

Figures are drawn on a bare `Figure` with an Agg canvas, never through pyplot,
so no global figure state or GUI backend is touched. The bytes are
deterministic: matplotlib's default style (a user's matplotlibrc is ignored),
fixed size and dpi, and no "Software" stamp in the PNG metadata. Only the
figure modules (pipeline/reporting/*figures.py) and this one import matplotlib.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import matplotlib.style
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 100


def drawn(draw: Callable[[Figure], None], size: tuple[float, float]) -> Figure:
    """A fresh figure of `size` inches with `draw` applied (call inside the style)."""
    figure = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    draw(figure)
    return figure


def render(
    draw: Callable[[Figure], None], size: tuple[float, float], title: str | None = None
) -> bytes:
    """PNG bytes; `title` goes into the PNG's Title text (what a command checks before
    it replaces a file: its own earlier output only)."""
    metadata = {"Software": None, **({"Title": title} if title else {})}
    with matplotlib.style.context("default"):
        figure = drawn(draw, size)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata=metadata)
    return buffer.getvalue()


@dataclass(frozen=True)
class Plot:
    """One figure: its file name, how it is drawn and at what size; where report.md
    shows it (`section`, for the report stage's own figures) and its caption."""

    name: str
    draw: Callable[[Figure], None]
    size: tuple[float, float]
    caption: str = ""
    section: str = ""

    @cached_property
    def png(self) -> bytes:
        return render(self.draw, self.size)

    def figure(self) -> Figure:
        """The matplotlib figure itself, laid out as in the PNG (what a test inspects)."""
        with matplotlib.style.context("default"):
            figure = drawn(self.draw, self.size)
            figure.canvas.draw()
        return figure


def pngs(plots: list[Plot]) -> dict[str, bytes]:
    """The plots' PNG bytes by file name."""
    return {plot.name: plot.png for plot in plots}


def ring_lesson_seeds(ax, table: pd.DataFrame, lesson: list[int], x: str, y: str, size: int):
    """Ring the points of the lesson's seeds, one colour each, for the legend."""
    for i, seed in enumerate(lesson):
        row = table[table["seed"] == seed]
        ax.scatter(
            row[x],
            row[y],
            s=size,
            facecolors="none",
            edgecolors=f"C{i + 1}",
            linewidths=1.5,
            label=f"run {seed}",
        )
