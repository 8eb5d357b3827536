"""How the run-to-run gap moved across versions: `python -m pipeline.history`.

Reads the MLflow store (pipeline.tracking.search_parent_runs) and
prints one row per recorded version (DVC experiment or git commit): the gap,
each seed's held-out accuracy, marker mass and agreement, and the params that
differ between versions. `--plot FILE` draws the gap across versions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pipeline import tracking
from pipeline.config import PARAMS_FILE, PROJECT_ROOT, load_params
from pipeline.errors import PipelineError, TrackingError
from pipeline.files import write_bytes

SEED_METRICS = {
    "heldout_accuracy": "heldout",
    "marker_mass": "mass",
    "weight_effect_agreement": "agree",
}


def metric(runs: pd.DataFrame, name: str, before: str) -> pd.Series:
    """A metric's column under its name (e.g. gap/seed_gap), filled in from the name
    that stores written before the namespaces used (seed_gap), so one table spans
    both. A store with neither cannot be read."""
    columns = [f"metrics.{key}" for key in (name, before) if f"metrics.{key}" in runs]
    if not columns:
        raise TrackingError(
            f"the store's runs have neither metric {name!r} nor {before!r}: not written "
            "by this pipeline"
        )
    values = runs[columns[0]]
    for column in columns[1:]:
        values = values.combine_first(runs[column])
    return values


def history_table(parents: pd.DataFrame, children: pd.DataFrame) -> pd.DataFrame:
    """One row per parent run, oldest first."""
    if parents.empty:
        return pd.DataFrame()
    parents = parents.sort_values("start_time")
    table = pd.DataFrame(
        {
            "version": parents["tags.mlflow.runName"].to_numpy(),
            "gap": metric(parents, "gap/seed_gap", "seed_gap").to_numpy(),
        },
        index=parents["run_id"].to_numpy(),
    )
    children = children.assign(
        **{name: metric(children, f"lesson/{name}", name) for name in SEED_METRICS}
    )
    for name, short in SEED_METRICS.items():
        wide = children.pivot_table(
            index="tags.mlflow.parentRunId", columns="tags.seed", values=name
        )
        for seed in sorted(wide.columns, key=int):
            table[f"{short}_{seed}"] = wide[seed].reindex(table.index)
    params = parents.set_index("run_id")
    shaping = [f"params.{group}." for group in tracking.NUMBER_GROUPS]
    params = params[[c for c in params.columns if c.startswith(tuple(shaping))]]
    varying = [c for c in params.columns if params[c].nunique(dropna=False) > 1]
    for column in varying:
        table[column.removeprefix("params.")] = params[column].reindex(table.index)
    return table.reset_index(drop=True)


def store_parser(description: str) -> argparse.ArgumentParser:
    """The options of every command that reads the store: --uri, --experiment."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--uri", help="tracking URI (default: as the pipeline resolves it)")
    parser.add_argument("--experiment", help="experiment name (default: tracking.experiment)")
    return parser


def read_store(args: argparse.Namespace) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """(URI, parent runs, child runs) of the store the options name, params.yaml's
    tracking settings by default; a store that cannot be read ends the command."""
    try:
        cfg = load_params(PROJECT_ROOT / PARAMS_FILE).tracking
        uri = args.uri or tracking.store_uri(cfg)
        return uri, *tracking.search_parent_runs(uri, args.experiment or cfg.experiment)
    except PipelineError as err:
        sys.exit(f"error: {err}")


def main(argv: list[str] | None = None) -> None:
    parser = store_parser(__doc__.splitlines()[0])
    parser.add_argument("--plot", type=Path, help="write a PNG of the gap across versions")
    args = parser.parse_args(argv)
    uri, parents, children = read_store(args)
    try:
        table = history_table(parents, children)
    except PipelineError as err:
        sys.exit(f"error: cannot read {uri}: {err}")
    if table.empty:
        sys.exit(f"error: no runs recorded in {uri}")
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(table.to_string(index=False, float_format="{:.4f}".format))
    if args.plot:
        from pipeline.figures import gap_history_png

        write_bytes(args.plot, gap_history_png(list(table["version"]), list(table["gap"])))
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
