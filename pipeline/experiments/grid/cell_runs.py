"""The grid's cells in MLflow (the next_lesson stage): one parent run per cell in
`<tracking.experiment>-next-lesson`, its numbers under grid/ (held-out accuracy, the
solved share, the majority baseline, the hand-set accuracy, the shuffled control,
per-head numbers)."""

from __future__ import annotations

from pipeline.experiments.grid.config import TRACKING_SUFFIX
from pipeline.reporting.summary import interval
from pipeline.tracking.cell_runs import CellRuns
from pipeline.tracking.state import nested_metrics, sanity_metrics

PER_SEED = ("per_seed_heldout_accuracy", "per_seed_marker_mass", "per_seed_entropy")


def cell_metrics(document: dict) -> dict[str, float]:
    """The cell's numbers as grid/... metrics: summaries only, not every seed's."""
    numbers = {k: v for k, v in document.items() if isinstance(v, (int, float, dict))}
    if "heads" in numbers:
        numbers["heads"] = {k: v for k, v in numbers["heads"].items() if k not in PER_SEED}
    numbers.pop("model", None)
    numbers.pop("params", None)  # the settings it was made from, logged as params
    sanity = {}
    if "sanity" in numbers.get("faithfulness", {}):
        numbers["faithfulness"] = dict(numbers["faithfulness"])
        sanity = sanity_metrics(numbers["faithfulness"].pop("sanity"), "grid/sanity/")
    values = {k: v for k, v in nested_metrics(numbers, "grid/").items() if v == v}
    return {**values, **sanity}


def grid_note(name: str, document: dict) -> str:
    accuracy = interval(document["heldout_accuracy"])
    return f"{name}: held-out {accuracy} over {document['seeds']} seeds"


RUNS = CellRuns(
    TRACKING_SUFFIX, cell_metrics, grid_note, "python -m pipeline.experiments.grid.next_lesson"
)
