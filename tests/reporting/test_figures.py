"""Every committed figure draws its marks (issue 50, item 4: study_pair_gaps.png had
bars 1e-8 wide, axes and a line but nothing else to see).

Each figure is drawn again through the figure functions from the committed data,
checked to be the committed PNG byte for byte, and each of its axes inspected in
display coordinates: every bar, line, point cloud and image it holds has an extent a
reader can see."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from pipeline.analysis import stats
from pipeline.config import PROJECT_ROOT, provenance, validate
from pipeline.experiments.debate.figures import debate_plots
from pipeline.experiments.dynamics.figures import dynamics_figures
from pipeline.experiments.faithfulness.figures import faithfulness_figures
from pipeline.experiments.grid.figures import next_lesson_plots
from pipeline.experiments.grid.section import experiments
from pipeline.experiments.study.figures import study_figures, study_pair_gaps
from pipeline.reporting.drawing import Plot
from pipeline.reporting.figures import lesson_figures
from tests.conftest import composed

MIN_PIXELS = 1.0  # a mark narrower than a pixel is not seen
HELDOUT = 180  # the default config's held-out sequences: accuracy moves by 1/180


def cells(root: Path, stage: str) -> list[dict]:
    """The default config's cells of `stage` (grid or debate), in its order, as the
    next_lesson and debate_figures stages read them."""
    cfg = validate(composed())
    folder = root / getattr(cfg.paths, stage)
    return [
        json.loads(provenance.cell_path(folder, cell.task, cell.variant).read_text())
        for cell in getattr(cfg, stage).cells.values()
    ]


def committed_plots(root: Path = PROJECT_ROOT) -> dict[str, Plot]:
    """Every figure the default config commits, by its path under `root`, drawn from
    the committed data; the study's figures only where its parquet files are there
    (DVC-cached: a fresh clone has them after `dvc repro` or `dvc pull`)."""
    reports = root / "reports"
    document = json.loads((reports / "metrics.json").read_text())
    steps = pd.read_csv(reports / "steps.csv")
    curves = pd.read_csv(reports / "training.csv")
    plots = {
        f"reports/figures/{plot.name}": plot
        for plot in lesson_figures(document, steps, curves, 0.5, 0.05)
    }
    study_summary = json.loads((reports / "study/summary.json").read_text())
    battery = json.loads((reports / "faithfulness.json").read_text())
    battery_summary = json.loads((reports / "study/faithfulness.json").read_text())
    lesson = [int(seed) for seed in battery["runs"]]
    seeds, battery_seeds = reports / "study/seeds.parquet", reports / "study/faithfulness.parquet"
    if seeds.exists() and battery_seeds.exists():
        table = pd.read_parquet(seeds)
        gaps = stats.pair_gap_counts(torch.tensor(table["heldout_accuracy"].to_numpy()))
        pairs = tuple(g.tolist() for g in gaps)
        drawn = study_figures(table, study_summary, pairs, 1 / HELDOUT)
        drawn += faithfulness_figures(pd.read_parquet(battery_seeds), lesson, battery_summary)
    else:  # the sanity figure alone: it is drawn from the summary in git
        sanity = faithfulness_figures(pd.DataFrame(), lesson, battery_summary)
        drawn = [plot for plot in sanity if plot.name == "faithfulness_sanity.png"]
    drawn += dynamics_figures(json.loads((reports / "dynamics/dynamics.json").read_text()))
    plots |= {f"reports/figures/{plot.name}": plot for plot in drawn}
    grid = next_lesson_plots(*experiments(cells(root, "grid")))
    plots |= {f"reports/next_lesson/{plot.name}": plot for plot in grid}
    debate = debate_plots(cells(root, "debate"))
    return plots | {f"reports/debate_figures/{plot.name}": plot for plot in debate}


def extent(artist, ax: Axes) -> tuple[float, float]:
    """Width and height in pixels of a patch's box."""
    box = artist.get_window_extent(ax.figure.canvas.get_renderer())
    return box.width, box.height


def unseen_marks(ax: Axes) -> list[str]:
    """The marks of `ax` a reader cannot see: bars under a pixel wide or tall, lines
    without two distinct points (or a marker), empty point clouds and images. An
    axes without any mark is reported too."""
    unseen, marks = [], 0
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible():
            marks += 1
            width, height = extent(patch, ax)
            if width < MIN_PIXELS or height < MIN_PIXELS:
                unseen.append(f"bar {width:.2g} x {height:.2g} px at x={patch.get_x():.4g}")
    for line in ax.lines:
        if not line.get_visible():
            continue
        marks += 1
        points = ax.transData.transform(line.get_xydata()).round(1)
        distinct = len({tuple(p) for p in points if all(abs(v) < 1e9 for v in p)})
        if distinct < 1 or (distinct < 2 and line.get_marker() in (None, "None", "", " ")):
            unseen.append(f"line {line.get_label()} with {distinct} distinct points")
    for collection in ax.collections:
        if not collection.get_visible():
            continue
        marks += 1
        if len(collection.get_offsets()) == 0 and not collection.get_paths():
            unseen.append(f"empty {type(collection).__name__}")
    for image in ax.images:
        marks += 1
        if image.get_array() is None or image.get_array().size == 0:
            unseen.append("empty image")
    if marks == 0:
        unseen.append("no mark at all")
    return unseen


def assert_marks_drawn(plot: Plot) -> None:
    figure = plot.figure()
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert axes, plot.name
    unseen = {ax.get_title() or f"axes {i}": unseen_marks(ax) for i, ax in enumerate(axes)}
    assert not {title: marks for title, marks in unseen.items() if marks}, plot.name


COMMITTED = sorted(
    path.relative_to(PROJECT_ROOT).as_posix()
    for folder in ("figures", "next_lesson", "debate_figures")
    for path in (PROJECT_ROOT / "reports" / folder).glob("*.png")
)


@pytest.fixture(scope="module")
def plots() -> dict[str, Plot]:
    return committed_plots()


def test_every_committed_figure_is_drawn_by_the_figure_functions(plots):
    assert len(COMMITTED) >= 17
    assert set(COMMITTED) >= set(plots)


@pytest.mark.parametrize("path", COMMITTED)
def test_every_committed_figure_draws_its_marks(plots, path):
    if path not in plots:
        pytest.skip(f"{path} is drawn from reports/study/*.parquet: run `dvc repro` first")
    plot = plots[path]
    assert plot.png == (PROJECT_ROOT / path).read_bytes()  # what was inspected is committed
    assert_marks_drawn(plot)


def test_pair_gap_bars_are_as_wide_as_one_held_out_sequence():
    """By hand: accuracies 1, 1, 179/180 written at 8 decimals; their gaps 0 (1 pair)
    and 1/180, once as 0.00555556 and once as 0.00555555 (1 pair each). One bar per
    multiple of 1/180, 0.8 of that wide: 0.00444 in data units, not 1e-8."""
    plot = Plot(
        "gaps.png",
        lambda figure: study_pair_gaps(
            figure, [0.0, 0.00555555, 0.00555556], [1.0, 1.0, 1.0], 1 / 180, 0.1056, 0.0
        ),
        (7, 3.6),
    )
    ax = plot.figure().axes[0]
    bars = [patch for patch in ax.patches if isinstance(patch, Rectangle)]
    assert [round(bar.get_x() + bar.get_width() / 2, 8) for bar in bars] == [0.0, 0.00555556]
    assert [bar.get_height() for bar in bars] == pytest.approx([1 / 3, 2 / 3])
    assert [bar.get_width() for bar in bars] == pytest.approx([0.8 / 180] * 2)
    assert unseen_marks(ax) == []


def test_a_bar_narrower_than_a_pixel_is_reported():
    """The check itself: the old figure's 1e-8 wide bar is unseen, a wide one is seen."""

    def draw(figure, width):
        ax = figure.subplots()
        ax.bar([0.0, 0.5], [1.0, 2.0], width=width)
        ax.axvline(0.25)

    thin = Plot("thin.png", lambda figure: draw(figure, 1e-8), (4, 3)).figure().axes[0]
    assert [mark.split(" x ")[0] for mark in unseen_marks(thin)] == ["bar 6.4e-06"] * 2
    wide = Plot("wide.png", lambda figure: draw(figure, 0.2), (4, 3)).figure().axes[0]
    assert unseen_marks(wide) == []
    empty = Plot("empty.png", lambda figure: figure.subplots().plot([], []), (4, 3))
    (unseen,) = unseen_marks(empty.figure().axes[0])
    assert unseen.startswith("line ") and unseen.endswith("with 0 distinct points")
