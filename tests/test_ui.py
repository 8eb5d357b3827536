"""MLflow's web UI in a real headless browser (Debian's chromium via playwright):
the versions and the gap chart a user looks for are on the page."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline import tracking
from scripts.mlflow_ui import CHROMIUM, chromium_page, mlflow_ui, runs_url, show_charts
from tests.test_tracking import committed_state

pytestmark = pytest.mark.slow


@pytest.fixture
def two_versions(default_cfg, tmp_path, monkeypatch) -> Path:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no browser at {CHROMIUM}: .ci/run installs Debian's chromium")
        pytest.skip(f"no browser at {CHROMIUM} (apt install chromium)")
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))  # artifacts under tmp_path/mlartifacts
    store = tmp_path / "mlflow.db"
    uri = f"sqlite:///{store}"
    tracking.log_state(committed_state(default_cfg, uri, **{"dvc.exp_name": "lesson-main"}))
    lower = committed_state(default_cfg, uri, **{"dvc.exp_name": "lower-lr"})
    lower.cfg = replace(lower.cfg, train=replace(lower.cfg.train, lr=0.3))
    lower.metrics["seed_gap"] = 0.2167
    tracking.log_state(lower)
    return store


def test_the_runs_view_shows_each_version_and_the_gap_chart(two_versions):
    artifacts = two_versions.parent / "mlartifacts"
    with mlflow_ui(two_versions, artifacts) as base:
        with chromium_page() as page:
            # The experiment's id is 1 in a fresh store (0 is Default).
            page.goto(runs_url(base, "1", "CHART"))
            show_charts(page, "gap/seed_gap")
            page.get_by_text("gap/seed_gap", exact=True).first.wait_for(timeout=120_000)
            page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)
            assert page.get_by_text("lower-lr").count() >= 1
        # The saved gap view, in a fresh browser as a user's link opens it: the chart
        # page's own state stays behind. Ungrouped, MLflow folds the seed runs under
        # their parent; grouped by version, every run shows, with its description.
        with chromium_page() as page:
            page.goto(runs_url(base, "1", view=tracking.GAP_VIEW))
            page.get_by_text("Group by: version").first.wait_for(timeout=120_000)
            for version in ("lesson-main", "lower-lr", "lower-lr / seed 2"):
                page.get_by_text(version, exact=True).first.wait_for(timeout=120_000)
            page.get_by_text("train.lr 0.6\u21920.3; gap 0.2167").first.wait_for(timeout=60_000)


def test_pipeline_ui_prints_the_gap_view_and_stops_on_ctrl_c(default_cfg, store, tmp_path):
    """`python -m pipeline.ui`: the link to the saved gap view of the project's store,
    served on loopback until Ctrl-C, which stops the server it started."""
    import signal
    import subprocess
    import sys
    import urllib.request

    tracking.log_state(committed_state(default_cfg, store))
    project = Path(store.removeprefix("sqlite:///")).parent
    ui = subprocess.Popen(
        [sys.executable, "-m", "pipeline.ui", "--experiment", "test"],
        env={**os.environ, "DVC_ROOT": str(project)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = ui.stdout.readline()
        assert first.startswith("MLflow UI at http://127.0.0.1:"), first + ui.stderr.read()
        link = ui.stdout.readline().strip()
        assert link.endswith(
            f"/runs?workflowType=machine_learning&compareRunsMode=TABLE"
            f"&viewStateShareKey={tracking.GAP_VIEW}"
        )
        base = link.split("/#/")[0]
        with urllib.request.urlopen(f"{base}/health", timeout=10) as response:
            assert response.status == 200
    finally:
        ui.send_signal(signal.SIGINT)
        out, _ = ui.communicate(timeout=60)
    assert ui.returncode == 0 and out.strip().endswith("stopped")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base}/health", timeout=5)


def test_pipeline_ui_without_a_store_says_what_to_run(tmp_path, monkeypatch):
    from pipeline.tracking import ui

    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        ui.main([])
    assert (
        exit_.value.code
        == f"error: no MLflow store at {tmp_path / 'mlflow.db'}: run `dvc repro` first"
    )
