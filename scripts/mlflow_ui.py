"""Drive MLflow's web UI in a real headless browser: README screenshots and the
slow UI test (tests/tracking/test_ui.py).

    python scripts/mlflow_ui.py STORE_DB OUT_DIR

serves STORE_DB (a SQLite MLflow store) with `mlflow ui` on a free loopback port,
behind the login kept beside it (pipeline/tracking/auth.py), and writes the
README's screenshots into OUT_DIR. The browser is Debian's chromium (`apt install
chromium`), driven by playwright's Python API; playwright downloads no browser of
its own.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from pipeline.browse.ui import LOGIN_FOLDER, mlflow_ui
from pipeline.tracking.auth import Login, login
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
def chromium_page(owner: Login | None = None, width: int = 1440, height: int = 900):
    """A playwright page in headless Debian chromium; with `owner`, it answers the
    server's login dialog as the owner would."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            # A new context: a fresh profile, nothing in localStorage.
            credentials = owner and {"username": owner.username, "password": owner.password}
            page = browser.new_page(
                viewport={"width": width, "height": height}, http_credentials=credentials
            )
            yield page
        finally:
            browser.close()


def open_gap_view(page, base: str, experiment: str) -> None:
    """What docs/tracking.md tells a new user to do, from the UI's home page: the
    sidebar's "Model training" switch, the experiment, Views > gap."""
    page.goto(f"{base}/")
    page.get_by_text("Model training", exact=True).first.click(timeout=120_000)
    page.get_by_role("link", name=experiment, exact=True).first.click(timeout=120_000)
    page.get_by_test_id("saved-views-trigger").click(timeout=120_000)
    page.get_by_role("menuitem").filter(has_text=GAP_VIEW).first.click(timeout=60_000)
    wait_for_gap_table(page)


def wait_for_gap_table(page) -> None:
    """The saved gap view's table: grouped by version, its gap columns loaded."""
    page.get_by_text("Group by: version").first.wait_for(timeout=120_000)
    gap_cells(page, "gap/sequences").first.wait_for(timeout=120_000)


def gap_cells(page, metric: str):
    """The table's cells of `metric`, one per run row and group row."""
    return page.locator(f'[role="gridcell"][col-id="metrics.`{metric}`"]')


def show_chart_view(page) -> None:
    """The view buttons' second, the charts (the saved view filters them)."""
    page.locator('label:has(input[name="runs-view-mode"][value="CHART"])').click(timeout=60_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=120_000)


def chart_labels(page, metric: str) -> list[str]:
    """The value labels on the bars of `metric`'s chart, top to bottom."""
    card = page.locator("[data-testid='experiment-view-compare-runs-card']").filter(
        has=page.get_by_text(metric, exact=True)
    )
    bars = card.first.locator(".js-plotly-plot .bartext")
    bars.first.wait_for(timeout=120_000)
    return [text.strip() for text in bars.all_text_contents()]


def show_charts(page, search: str) -> None:
    """Filter the chart view to the charts whose metric name contains `search`."""
    box = page.locator('input[placeholder="Search metric charts"]:visible')
    box.wait_for(timeout=120_000)
    box.fill(search, timeout=120_000)  # disabled until the runs have loaded


def screenshots(store: Path, artifacts: Path, out: Path, experiment: str) -> list[Path]:
    """The README's three pictures, in one fresh browser (no state prepared),
    clicking what docs/tracking.md says: the saved gap view (runs table), its
    charts (the gap per version), and the training loss by version (the chart
    search box: mean line over the seeds, min-max band)."""
    out.mkdir(parents=True, exist_ok=True)
    shots = [out / name for name in ("mlflow-runs-table.png", "mlflow-gap-per-version.png")]
    shots.append(out / "mlflow-loss-by-version.png")
    owner = login(store.parent / LOGIN_FOLDER)
    with mlflow_ui(store, owner, artifacts) as base, chromium_page(owner) as page:
        open_gap_view(page, base, experiment)
        page.wait_for_timeout(2000)
        page.screenshot(path=shots[0])
        show_chart_view(page)
        chart_labels(page, "gap/sequences")
        page.wait_for_timeout(3000)
        page.screenshot(path=shots[1])
        show_charts(page, "train/loss")
        page.get_by_text("train/loss", exact=True).first.wait_for(timeout=120_000)
        page.wait_for_timeout(5000)
        page.screenshot(path=shots[2])
    return shots


if __name__ == "__main__":
    store_db, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for shot in screenshots(
        store_db, store_db.parent / "mlartifacts", out_dir, "attention-faithfulness"
    ):
        print(f"wrote {shot}")
