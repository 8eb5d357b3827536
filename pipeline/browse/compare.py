"""The model variants (and tasks) side by side: `python -m pipeline compare`.

Reads the tracked versions from the MLflow store (as pipeline history does) and
prints one row per version, its task (`task.kind`) and variant (`model.kind`)
first: its parameter count, the run-to-run gap and held-out range, the lesson's
per-seed numbers as means over the version's seeds, each variant's own numbers
(sink mass, per-head marker mass and argmax hit), and the seed study's summary
where the version has one.
A column a variant does not have stays empty.
"""

from __future__ import annotations

import sys

import pandas as pd

from pipeline.browse.history import metric, read_store, store_parser, text_table
from pipeline.core import measures
from pipeline.core.errors import PipelineError
from pipeline.core.files import Writes, write_csv


def parent_columns() -> dict[str, str]:
    """Parent metric -> column: the model, the gap, the study's mean of each headline
    held-out metric. The gap's name before the namespaces is the fallback."""
    study = {
        f"study/{key}/mean": f"study_{measures.METRICS[key].column}"
        for key in measures.heldout_means()
        if measures.METRICS[key].headline
    }
    return {
        "model/parameters": "params",
        "gap/seed_gap": "gap",
        "gap/heldout_min": "heldout_min",
        "gap/heldout_max": "heldout_max",
        **study,
        "study/pair_gap/p_at_least_observed": "study_p_gap",
    }


def seed_columns() -> dict[str, str]:
    """Per-seed metric (under lesson/) -> column of its mean over the version's seeds:
    every held-out mean."""
    return {key: measures.METRICS[key].column for key in measures.heldout_means()}


VARIANT_PARAMS = ("model.kind", "model.heads", "model.positional", "model.window")


def variant_table(parents: pd.DataFrame, children: pd.DataFrame) -> pd.DataFrame:
    """One row per parent run, oldest first."""
    if parents.empty:
        return pd.DataFrame()
    parents = parents.sort_values("start_time").set_index("run_id")
    missing = pd.Series(index=parents.index, dtype=object)
    kind = parents.get("params.model.kind", missing)
    task = parents.get("params.task.kind", missing)  # runs logged before tasks: the lesson's
    table = pd.DataFrame(
        {
            "task": task.fillna("lesson"),
            "variant": kind.fillna("lesson"),
            "version": parents["tags.mlflow.runName"],
        }
    )
    for key in VARIANT_PARAMS[1:]:  # where they tell the rows apart
        if f"params.{key}" in parents and parents[f"params.{key}"].nunique() > 1:
            table[key.removeprefix("model.")] = parents[f"params.{key}"]
    table["gap"] = metric(parents, "gap/seed_gap", "seed_gap")
    for name, column in parent_columns().items():
        if f"metrics.{name}" in parents and column != "gap":
            table[column] = parents[f"metrics.{name}"]
    if "params" in table:
        table["params"] = table["params"].round().astype("Int64")
    seeds = children.set_index("tags.mlflow.parentRunId")
    for name, column in seed_columns().items():
        table[column] = metric(seeds, f"lesson/{name}", name).groupby(level=0).mean()
    # The kinds' own numbers (interface.extra_values): sink, per head.
    prefixes = ("metrics.lesson/sink_", "metrics.lesson/head_")
    own = [c for c in seeds.columns if c.startswith(prefixes)]
    for column in sorted(own):
        table[column.removeprefix("metrics.lesson/")] = seeds[column].groupby(level=0).mean()
    first = ("task", "variant", "version")
    order = [*first, *[c for c in table.columns if c not in first]]
    return table[order].reset_index(drop=True)


def own_csv(head: bytes) -> bool:
    """Whether a file begins as this command's CSV does (variant_table's first columns)."""
    return head.startswith(b"task,variant,version")


def main(argv: list[str] | None = None) -> None:
    parser = store_parser(__doc__.splitlines()[0])
    parser.add_argument("--csv", action=Writes, is_own=own_csv, help="also write the table as CSV")
    args = parser.parse_args(argv)
    uri, parents, children = read_store(args)
    try:
        table = variant_table(parents, children)
    except PipelineError as err:
        sys.exit(f"error: cannot read {uri}: {err}")
    if table.empty:
        sys.exit(f"error: no runs recorded in {uri}")
    print(text_table(table))
    if args.csv:
        write_csv(args.csv, table)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
