"""The lesson's tables and its golden numbers beside them, as plain text (what the
evaluate stage prints) and as Markdown (report.md's lesson sections).

No matplotlib here: the figures live in the *figures.py modules.
"""

from __future__ import annotations

import pandas as pd

from pipeline.analysis.golden import GOLDEN, LESSON
from pipeline.core import measures
from pipeline.reporting import tables

DATA_ROWS = {
    "train_positive_rate": "positive rate, train",
    "heldout_positive_rate": "positive rate, held-out",
    "baseline": "baseline (majority class)",
    "any_step_above_threshold": "any candidate step above threshold",
    "max_reading_at_marker": "largest reading at the marked step",
    "uniform_weight": "uniform weight",
}


def data_table(document: dict) -> pd.DataFrame:
    numbers = document["data"]
    return pd.DataFrame(
        {"quantity": list(DATA_ROWS.values()), "value": [numbers[k] for k in DATA_ROWS]}
    )


def run_table(document: dict, group: str, high: float = 0.5, low: float = 0.05) -> pd.DataFrame:
    columns = {
        key: measures.METRICS[key].short.format(high=high, low=low)
        for key in measures.in_table(group)
    }
    frame = pd.DataFrame.from_dict(document["runs"], orient="index")[list(columns)]
    frame = frame.rename(columns=columns)
    frame.index = [f"run {seed}" for seed in frame.index]
    return frame


def variant_table(document: dict) -> pd.DataFrame | None:
    """The variant's own per-run numbers (sink mass; per-head marker mass and argmax
    hit), one row per run; None for a model without any (the lesson)."""
    frame = pd.DataFrame.from_dict(document["runs"], orient="index")
    extras = [key for key in frame.columns if key not in measures.METRICS]
    if not extras:
        return None
    frame = frame[extras].rename(columns=lambda key: key.replace("_", " "))
    frame.index = [f"run {seed}" for seed in frame.index]
    return frame


def first_example_weights(steps: pd.DataFrame) -> pd.DataFrame:
    """Weights of the first held-out sequence, one row per seed."""
    first = steps[steps["id"] == steps["id"].min()]
    return first.pivot(index="seed", columns="step", values="weight")


def first_marked_step(steps: pd.DataFrame) -> int:
    first = steps[(steps["id"] == steps["id"].min()) & steps["is_marked"]]
    return int(first["step"].iloc[0])


def text_tables(document: dict, steps: pd.DataFrame, high: float, low: float) -> str:
    """The lesson's printed tables, 4 decimals."""
    fmt = "{:.4f}".format
    first = first_example_weights(steps)
    marked = first_marked_step(steps)
    lines = [
        f"sequences {document['data']['sequences']}",
        data_table(document).to_string(index=False, formatters={"value": fmt}),
        "",
        f"parameters per run {document['parameters']}",
        run_table(document, "accuracy").to_string(float_format=fmt),
        f"run-to-run gap {document['seed_gap']:.4f}   held-out mean "
        f"{document['heldout_accuracy_mean']:.4f} std {document['heldout_accuracy_std']:.4f}",
        "",
        f"uniform weight {document['data']['uniform_weight']:.4f}",
        run_table(document, "weights").to_string(float_format=fmt),
        f"first held-out sequence, marked step {marked}:",
        *(
            f"run {seed} weights " + " ".join(f"{w:.2f}" for w in row)
            for seed, row in first.iterrows()
        ),
        "",
        run_table(document, "ablation", high, low).to_string(float_format=fmt),
    ]
    extras = variant_table(document)
    if extras is not None:
        lines += ["", extras.to_string(float_format=fmt)]
    return "\n".join(lines)


def formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers, everything else at the lesson's 4 decimals."""

    def column(values: pd.Series) -> pd.Series:
        if pd.api.types.is_integer_dtype(values):
            return values.astype(str)
        return values.map(lambda v: "" if pd.isna(v) else f"{v:.4f}")

    return frame.apply(column)


def beside_golden(table: pd.DataFrame, golden: pd.DataFrame) -> pd.DataFrame:
    """Each column followed by its lesson value, `x` then `x (lesson)`; rows the
    lesson never printed get an empty cell."""
    golden = formatted(golden).reindex(table.index).fillna("")
    ours = formatted(table)
    columns = {}
    for name in table.columns:
        columns[name] = ours[name]
        columns[f"{name} ({LESSON})"] = golden[name]
    return pd.DataFrame(columns, index=table.index)


def markdown_table(table: pd.DataFrame, golden: pd.DataFrame | None) -> str:
    shown = formatted(table) if golden is None else beside_golden(table, golden)
    return tables.markdown(shown, stralign="right", disable_numparse=True)


def data_markdown(document: dict, golden: bool) -> str:
    table = data_table(document).set_index("quantity")
    lesson = data_table({"data": GOLDEN["data"]}).set_index("quantity") if golden else None
    return markdown_table(table, lesson)


def runs_markdown(document: dict, group: str, golden: bool, high: float, low: float) -> str:
    table = run_table(document, group, high, low)
    lesson = run_table(GOLDEN, group, high, low) if golden else None
    if group == "weights":
        # Beside the marker mass: what any step gets from attention that ignores the input.
        table["uniform weight"] = document["data"]["uniform_weight"]
        if lesson is not None:
            lesson["uniform weight"] = GOLDEN["data"]["uniform_weight"]
    return markdown_table(table, lesson)


def across_seeds_markdown(document: dict, golden: bool) -> str:
    rows = {
        "run-to-run gap": "seed_gap",
        "held-out mean": "heldout_accuracy_mean",
        "held-out std": "heldout_accuracy_std",
    }
    table = pd.DataFrame({"value": [document[key] for key in rows.values()]}, index=list(rows))
    lesson = pd.DataFrame({"value": [GOLDEN["seed_gap"]]}, index=["run-to-run gap"])
    return markdown_table(table, lesson if golden else None)


def first_weights_markdown(steps: pd.DataFrame, golden: bool) -> str:
    """The first held-out sequence's weights at 2 decimals, the lesson's rows below."""
    rows = {f"run {seed}": list(row) for seed, row in first_example_weights(steps).iterrows()}
    table = pd.DataFrame(rows).T.map(lambda w: f"{w:.2f}")
    if golden:
        lesson = {f"run {k} ({LESSON})": v.split() for k, v in GOLDEN["first_weights"].items()}
        table = pd.concat([table, pd.DataFrame(lesson, index=table.columns).T])
    table.columns = [f"step {step}" for step in table.columns]
    return tables.markdown(table, stralign="right", disable_numparse=True)


def step_weights(steps: pd.DataFrame) -> pd.DataFrame:
    """Mean held-out weight per (seed, step); `run_step` labels one bar each, since a
    horizontal bar plot would stack seeds that share a step."""
    frame = steps.groupby(["seed", "step"], as_index=False)["weight"].mean()
    frame = frame.rename(columns={"weight": "mean_weight"})
    frame["run_step"] = (
        "run " + frame["seed"].astype(str) + " step " + frame["step"].map("{:02d}".format)
    )
    return frame
