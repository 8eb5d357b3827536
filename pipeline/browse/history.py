"""How the run-to-run gap moved across versions: `python -m pipeline history`.

Reads the MLflow store (pipeline.tracking.search.search_parent_runs) and
prints one row per recorded version (DVC experiment or git commit): the gap,
each seed's held-out accuracy, marker mass and agreement, and the params that
differ between versions. `--plot FILE` draws the gap across versions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pipeline.config import NUMBER_GROUPS, PARAMS_FILE, PROJECT_ROOT, load_params
from pipeline.core import measures
from pipeline.core.errors import PipelineError, TrackingError
from pipeline.core.files import Writes, read_json, write_bytes
from pipeline.scaleout import sweep as sweep_module
from pipeline.tracking.search import search_parent_runs
from pipeline.tracking.store import store_uri


def seed_metrics() -> dict[str, str]:
    """The headline metrics that are held-out means: metric key -> column."""
    shown = [key for key in measures.headline() if key in measures.heldout_means()]
    return {key: measures.METRICS[key].column for key in shown}


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
        **{name: metric(children, f"lesson/{name}", name) for name in seed_metrics()}
    )
    for name, short in seed_metrics().items():
        wide = children.pivot_table(
            index="tags.mlflow.parentRunId", columns="tags.seed", values=name
        )
        for seed in sorted(wide.columns, key=int):
            table[f"{short}_{seed}"] = wide[seed].reindex(table.index)
    params = parents.set_index("run_id")
    shaping = [f"params.{group}." for group in NUMBER_GROUPS]
    params = params[[c for c in params.columns if c.startswith(tuple(shaping))]]
    varying = [c for c in params.columns if params[c].nunique(dropna=False) > 1]
    for column in varying:
        table[column.removeprefix("params.")] = params[column].reindex(table.index)
    return table.reset_index(drop=True)


# The study job's numbers a sweep row shows (python -m pipeline.study jobs).
STUDY_COLUMNS = {
    "study/seeds": "study_seeds",
    "study/heldout_accuracy/mean": "study_heldout_mean",
    "study/pair_gap/p_at_least_observed": "p_at_least_gap",
    "study/share_marker_mass_above_half": "share_mass_above_half",
}


def sweep_table(parents: pd.DataFrame, children: pd.DataFrame, sweep_dir: Path) -> pd.DataFrame:
    """One row per job of the sweep in `sweep_dir`: its overrides, the gap, its seed
    runs, the study summary (study jobs); jobs that failed (their job.json) too."""
    sweep = str(sweep_dir.resolve())
    runs = parents[parents["tags.sweep"] == sweep] if "tags.sweep" in parents else parents[:0]
    seed_runs = children.groupby("tags.mlflow.parentRunId").size() if len(children) else {}
    rows = []
    for run_id, run in runs.set_index("run_id").iterrows():
        row = {
            "job": int(run["tags.sweep.job"]),
            "status": "logged",
            "overrides": run["tags.overrides"],
            "gap": run.get("metrics.gap/seed_gap"),
            "seed_runs": int(seed_runs.get(run_id, 0)),
        }
        for name, column in STUDY_COLUMNS.items():
            if pd.notna(run.get(f"metrics.{name}")):
                value = run[f"metrics.{name}"]
                row[column] = int(value) if column == "study_seeds" else value
        rows.append(row)
    for path in sorted(sweep_dir.rglob(sweep_module.JOB_FILE)):
        record = read_json(path)
        if record.get("status") == "failed":
            rows.append(
                {
                    "job": record["job"],
                    "status": f"failed: {record['error']}",
                    "overrides": " ".join(record["overrides"]),
                }
            )
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).sort_values("job", kind="stable").reset_index(drop=True)
    counts = {"seed_runs", "study_seeds"} & set(table.columns)  # NaN on failed jobs' rows
    return table.astype({column: "Int64" for column in counts})


MISSING = "-"  # one marker for a value a row does not have, in every table printed


def text_table(table: pd.DataFrame) -> str:
    """A table as the commands print it: reals at 4 decimals, integers as integers,
    missing values as MISSING."""

    def cell(value) -> str:
        if value is None or value is pd.NA or (isinstance(value, float) and value != value):
            return MISSING
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    with pd.option_context("display.width", 250, "display.max_columns", 60):
        return table.astype(object).map(cell).to_string(index=False)


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
        uri = args.uri or store_uri(cfg)
        return uri, *search_parent_runs(uri, args.experiment or cfg.experiment)
    except PipelineError as err:
        sys.exit(f"error: {err}")


def own_plot(head: bytes) -> bool:
    """Whether a PNG is this command's plot: its Title (matplotlib loads only here)."""
    from pipeline.reporting.figures import GAP_HISTORY_TITLE

    return GAP_HISTORY_TITLE.encode() in head


def main(argv: list[str] | None = None) -> None:
    parser = store_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--plot", action=Writes, is_own=own_plot, help="write a PNG of the gap across versions"
    )
    parser.add_argument(
        "--sweep", type=Path, metavar="DIR", help="one row per job of this Hydra sweep directory"
    )
    args = parser.parse_args(argv)
    uri, parents, children = read_store(args)
    try:
        if args.sweep:
            table = sweep_table(parents, children, args.sweep)
        else:
            table = history_table(parents, children)
    except PipelineError as err:
        sys.exit(f"error: cannot read {uri}: {err}")
    if table.empty:
        where = f" for sweep {args.sweep.resolve()}" if args.sweep else ""
        sys.exit(f"error: no runs recorded in {uri}{where}")
    print(text_table(table))
    if args.plot and not args.sweep:
        from pipeline.reporting.figures import gap_history_png

        write_bytes(args.plot, gap_history_png(list(table["version"]), list(table["gap"])))
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
