"""Drive MLflow's web UI in a real headless browser: README screenshots and the
slow UI test (tests/test_ui.py).

    python scripts/mlflow_ui.py STORE_DB OUT_DIR

serves STORE_DB (a SQLite MLflow store) with `mlflow ui` on a free loopback port
and writes the README's screenshots into OUT_DIR. The browser is Debian's
chromium (`apt install chromium`), driven by playwright's Python API; playwright
downloads no browser of its own.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from pipeline.tracking.store import experiment_id as find_experiment
from pipeline.tracking.ui import mlflow_ui, runs_url
from pipeline.tracking.view import GAP_VIEW

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Without these, chromium keeps trying to reach Google's hosts on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium_page(width: int = 1500, height: int = 900):
    """A playwright page in headless Debian chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


GAP_COLUMNS = [
    "gap/seed_gap",
    "gap/heldout_min",
    "gap/heldout_max",
    "study/pair_gap/p_at_least_observed",
]


def page_state(experiment_id: str, group_by_version: bool) -> str:
    """A script that seeds the browser's localStorage as if a user had chosen the
    Model-training view, closed the assistant, picked the gap columns and (for
    the charts) grouped the runs by their `version` tag."""
    import json

    state = {
        "searchFilter": "",
        "orderByKey": "attributes.start_time",
        "orderByAsc": True,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        "selectedColumns": [f"metrics.`{name}`" for name in GAP_COLUMNS]
        + ["params.`train.lr`", "params.`data.seed`", "params.`train.seeds`"],
        "runsHiddenMode": "SHOW_ALL",
        "hideEmptyCharts": True,
        "useGroupedValuesInCharts": True,
        "groupBy": {
            "aggregateFunction": "average",
            "groupByKeys": [{"mode": "tag", "groupByData": "version"}],
        }
        if group_by_version
        else None,
    }
    items = {
        f'MLflowLocalStorage-1.1-ExperimentPage-["{experiment_id}"]-ReactComponentState': (
            json.dumps(state)
        ),
        "mlflow.workflowType_v1": "machine_learning",
        "mlflow.assistant.panelOpen_v1": "false",
        "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true",
    }
    return "".join(
        f"localStorage.setItem({json.dumps(k)}, {json.dumps(v)});" for k, v in items.items()
    )


def show_charts(page, search: str) -> None:
    """Filter the chart view to the charts whose metric name contains `search`."""
    box = page.locator('input[placeholder="Search metric charts"]:visible')
    box.wait_for(timeout=120_000)
    box.fill(search, timeout=120_000)  # disabled until the runs have loaded


def screenshots(store: Path, artifacts: Path, out: Path, experiment: str) -> list[Path]:
    """The README's three pictures: the saved gap view (runs table), the gap
    per version, and the training loss grouped by version (mean line, min-max band)."""
    experiment_id = find_experiment(f"sqlite:///{Path(store).resolve()}", experiment)
    if experiment_id is None:
        raise SystemExit(f"error: no experiment {experiment!r} in {store}")
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    # One fresh browser per picture: the saved view would otherwise stay in force.
    with mlflow_ui(store, artifacts) as base:
        with chromium_page() as page:
            page.add_init_script(page_state(experiment_id, group_by_version=False))
            page.goto(runs_url(base, experiment_id, view=GAP_VIEW))
            page.get_by_text("gap/seed_gap").first.wait_for(timeout=120_000)
            page.wait_for_timeout(2000)
            shots.append(out / "mlflow-runs-table.png")
            page.screenshot(path=shots[-1])
        for grouped, search, name in (
            (False, "gap/", "mlflow-gap-per-version.png"),
            (True, "train/loss", "mlflow-loss-by-version.png"),
        ):
            with chromium_page() as page:
                page.add_init_script(page_state(experiment_id, group_by_version=grouped))
                page.goto(runs_url(base, experiment_id, "CHART"))
                show_charts(page, search)
                page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
                page.wait_for_timeout(5000)
                shots.append(out / name)
                page.screenshot(path=shots[-1])
    return shots


if __name__ == "__main__":
    store_db, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for shot in screenshots(
        store_db, store_db.parent / "mlartifacts", out_dir, "attention-faithfulness"
    ):
        print(f"wrote {shot}")
