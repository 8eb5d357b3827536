"""MLflow's web UI in a real headless browser (Debian's chromium via playwright),
each test in a fresh browser profile, as a new user opens it: the two versions'
gaps, apart, in the saved gap view's table and charts."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline import tracking
from pipeline.browse.ui import LOGIN_FOLDER, UI_HOST
from pipeline.tracking.auth import login
from scripts.mlflow_ui import (
    CHROMIUM,
    chart_labels,
    chromium_page,
    gap_cells,
    mlflow_ui,
    open_gap_view,
    show_chart_view,
    wait_for_gap_table,
)
from tests.conftest import assert_login_required, kill_group
from tests.tracking.helpers import committed_state

pytestmark = pytest.mark.slow


@pytest.fixture
def two_versions(default_cfg, tmp_path, monkeypatch) -> Path:
    """A project store with two versions whose gaps both read 0.11 at 2 decimals:
    0.1056 (19 of 180 held-out sequences) and 0.1111 (20)."""
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
    lower.metrics["seed_gap"] = 20 / 180
    tracking.log_state(lower)
    return store


# The first run of `pattern` in an element's text: whether it is drawn whole, inside
# the element's box (the grid clips a cell's overflow) and inside the window.
DRAWN_WHOLE = """(element, pattern) => {
  const box = element.getBoundingClientRect();
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const match = node.textContent.match(new RegExp(pattern));
    if (!match) continue;
    const range = document.createRange();
    range.setStart(node, match.index);
    range.setEnd(node, match.index + match[0].length);
    const drawn = range.getBoundingClientRect();
    return [match[0], drawn.right <= box.right && box.right <= window.innerWidth];
  }
  return null;
}"""


def drawn_whole(locator, pattern: str) -> list[tuple[str, bool]]:
    """(text, drawn whole) for each element of `locator` whose text matches `pattern`."""
    found = [element.evaluate(DRAWN_WHOLE, pattern) for element in locator.all()]
    return [tuple(each) for each in found if each is not None]


def assert_the_gap_and_the_counts_read_whole(page) -> None:
    """At 1440 x 900 (chromium_page's window), in every row of the gap columns,
    a group's "(average)" beside it: each number and each column's name whole."""
    for metric in ("gap/seed_gap", "gap/sequences"):
        header = page.locator(f'[role="columnheader"][col-id="metrics.`{metric}`"]')
        assert drawn_whole(header, metric) == [(metric, True)]
        numbers = drawn_whole(gap_cells(page, metric), r"\d[\d.]*")
        assert len(numbers) == 4, numbers  # two versions: the parent and its group row
        assert all(whole for _, whole in numbers), numbers


def assert_the_gap_of_each_version_shows(page) -> None:
    """The saved gap view in a fresh browser: no Assistant panel over the table;
    the two versions' gaps apart in the table (19 and 20 sequences, 0.1056 and
    0.1111), whole at 1440 x 900, and in the charts (bars labelled 19.00 and 20.00,
    where gap/seed_gap's read 0.11 twice)."""
    assert page.get_by_text("MLflow Assistant").count() == 0
    for version in ("lesson-main", "lower-lr", "lower-lr / seed 2"):
        assert page.get_by_text(version, exact=True).first.is_visible()
    page.get_by_text("train.lr 0.6\u21920.3; gap 0.1111").first.wait_for(timeout=60_000)
    sequences = gap_cells(page, "gap/sequences")
    assert sorted(t for t in sequences.all_text_contents() if t in ("19", "20")) == ["19", "20"]
    assert sequences.filter(has_text="19").first.is_visible()
    gaps = " ".join(gap_cells(page, "gap/seed_gap").all_text_contents())
    assert "0.1056" in gaps and "0.1111" in gaps
    assert_the_gap_and_the_counts_read_whole(page)
    show_chart_view(page)
    assert sorted(chart_labels(page, "gap/sequences")) == ["19.00", "20.00"]
    assert chart_labels(page, "gap/seed_gap") == ["0.11", "0.11"]  # why the count is there


def test_a_new_user_reaches_the_gap_from_the_ui_home(two_versions):
    """docs/tracking.md's walkthrough in a fresh browser, from the address
    `mlflow ui` serves: Model training, the experiment, Views > gap, the charts."""
    artifacts = two_versions.parent / "mlartifacts"
    owner = login(two_versions.parent / LOGIN_FOLDER)
    with mlflow_ui(two_versions, owner, artifacts) as base, chromium_page(owner) as page:
        open_gap_view(page, base, "test")
        assert_the_gap_of_each_version_shows(page)


def test_pipeline_ui_link_opens_the_gap_view_and_ctrl_c_stops_it(two_versions):
    """`python -m pipeline ui`: the link to the saved gap view of the project's store,
    opened in a fresh browser, served on loopback until Ctrl-C, which stops the
    server it started."""
    import signal
    import subprocess
    import sys
    import urllib.parse
    import urllib.request

    ui = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "ui", "--experiment", "test"],
        env={**os.environ, "DVC_ROOT": str(two_versions.parent)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, killed whole in the teardown
    )
    try:
        first = ui.stdout.readline()
        assert first.startswith(f"MLflow UI at http://{UI_HOST}:"), first + ui.stderr.read()
        password = two_versions.parent / LOGIN_FOLDER / "password"
        assert f"(log in as admin, password in {password})" in first
        link = ui.stdout.readline().strip()
        assert link.endswith(
            f"/runs?workflowType=machine_learning&compareRunsMode=TABLE"
            f"&viewStateShareKey={tracking.GAP_VIEW}"
        )
        port = urllib.parse.urlsplit(link).port
        health = f"http://127.0.0.1:{port}/health"  # urllib need not resolve *.localhost
        with urllib.request.urlopen(health, timeout=10) as response:
            assert response.status == 200
        assert_login_required(f"http://127.0.0.1:{port}", login(password.parent))
        with chromium_page(login(two_versions.parent / LOGIN_FOLDER)) as page:
            page.goto(link)
            wait_for_gap_table(page)
            assert_the_gap_of_each_version_shows(page)
    finally:
        ui.send_signal(signal.SIGINT)
        try:
            out, _ = ui.communicate(timeout=60)
        finally:
            kill_group(ui)
    assert ui.returncode == 0 and out.strip().endswith("stopped")
    with pytest.raises(OSError):
        urllib.request.urlopen(health, timeout=5)


def test_the_ui_refuses_every_request_without_the_owner_s_login(tmp_path, store):
    """Issue 34, case 3: any local user could read and change the store through the
    UI's API. `pipeline ui` says where the login is; the browser tests above log in."""
    from pipeline.browse.ui import mlflow_ui

    owner = login(tmp_path / LOGIN_FOLDER)
    with mlflow_ui(Path(store.removeprefix("sqlite:///")), owner) as base:
        assert_login_required(base.replace(UI_HOST, "127.0.0.1"), owner)


def test_pipeline_ui_without_a_store_says_what_to_run(tmp_path, monkeypatch):
    from pipeline.browse import ui

    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        ui.main([])
    assert (
        exit_.value.code
        == f"error: no MLflow store at {tmp_path / 'mlflow.db'}: run `dvc repro -sf track`"
    )


def test_the_servers_stop_on_sigint_even_when_started_with_it_ignored():
    """A background job (`cmd &`, nohup) starts with SIGINT ignored, which Python keeps:
    both commands install their own handlers, so SIGINT and SIGTERM still stop them."""
    import signal
    import subprocess
    import sys

    probe = (
        "import signal, sys\n"
        "from pipeline.tracking import loopback\n"
        "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
        "loopback.stop_on_signals()\n"
        "try:\n    print('ready', flush=True)\n    signal.pause()\n"
        "except KeyboardInterrupt:\n    print('stopped')\n"
    )
    for signum in (signal.SIGINT, signal.SIGTERM):
        child = subprocess.Popen(
            [sys.executable, "-c", probe],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        )
        try:
            assert child.stdout.readline() == "ready\n"
            child.send_signal(signum)
            assert child.communicate(timeout=30)[0] == "stopped\n"
        finally:
            kill_group(child)


def test_both_server_commands_take_the_signal_handlers():
    import inspect

    from pipeline.browse import ui
    from pipeline.scaleout import server

    assert "stop_on_signals()" in inspect.getsource(ui.main)
    assert "stop_on_signals()" in inspect.getsource(server.main)


@pytest.mark.slow
def test_ctrl_c_leaves_no_ui_log_behind(tmp_path, monkeypatch, store):
    """Issue 34, case 17: `pipeline ui` left its log in /tmp after every Ctrl-C."""
    import tempfile

    from pipeline.browse.ui import mlflow_ui

    logs = tmp_path / "tmp"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    database = Path(store.removeprefix("sqlite:///"))
    owner = login(tmp_path / LOGIN_FOLDER)
    with pytest.raises(KeyboardInterrupt), mlflow_ui(database, owner):
        assert len(list(logs.glob("mlflow-ui-*.log"))) == 1  # while it serves
        raise KeyboardInterrupt  # Ctrl-C
    assert list(logs.glob("mlflow-ui-*.log")) == []


def test_a_killed_pipeline_ui_leaves_no_mlflow_ui_serving(tmp_path, store):
    """Issue 53, item 1: after `kill -9` of `python -m pipeline ui`, its `mlflow ui`
    child served on. It now dies with its parent, as `pipeline server`'s children do."""
    import signal
    import subprocess
    import sys
    import time
    import urllib.parse
    import urllib.request

    from mlflow.tracking import MlflowClient

    from pipeline.core.processes import descendants, process_start

    MlflowClient(tracking_uri=store).create_experiment("test")
    ui = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "ui", "--experiment", "test"],
        env={**os.environ, "DVC_ROOT": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    children: list[tuple[int, str | None]] = []
    try:
        first = ui.stdout.readline()
        assert first.startswith(f"MLflow UI at http://{UI_HOST}:"), first + ui.stderr.read()
        port = urllib.parse.urlsplit(ui.stdout.readline().strip()).port
        health = f"http://127.0.0.1:{port}/health"
        children = [(pid, process_start(pid)) for pid in descendants(ui.pid)]
        assert children  # mlflow ui and its uvicorn
        ui.send_signal(signal.SIGKILL)
        ui.wait(timeout=30)
        alive = children
        for _ in range(200):  # polled, up to 20 s: not a measure of speed
            alive = [(pid, start) for pid, start in children if process_start(pid) == start]
            if not alive:
                break
            time.sleep(0.1)
        assert alive == []
        with pytest.raises(OSError):
            urllib.request.urlopen(health, timeout=5)
    finally:
        kill_group(ui)
        for pid, start in children:  # the old code's survivors, in sessions of their own
            if process_start(pid) == start:
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "planted", [".mlflow-auth", ".mlflow-auth/password", ".mlflow-auth/auth.ini.tmp"]
)
def test_a_login_folder_through_a_symbolic_link_is_refused_writing_nothing(
    tmp_path, store_template, monkeypatch, planted
):
    """Issue 49, item 2: `ln -s /some/shared/dir .mlflow-auth; python -m pipeline ui`
    wrote the password, the secret key and users.db into the link's target and made
    it 0700. A link on the login folder's path, or on a file in it, is refused in one
    line, as for `paths.*`, before anything is written."""
    import shutil

    from pipeline.browse import ui

    project, shared = tmp_path / "project", tmp_path / "shared"
    project.mkdir()
    shared.mkdir()
    shared.chmod(0o1777)
    store = project / "mlflow.db"
    shutil.copyfile(store_template, store)
    store.chmod(0o644)  # as the old code left it: the refusal changes nothing
    (project / LOGIN_FOLDER).mkdir(exist_ok=planted != LOGIN_FOLDER)
    if planted == LOGIN_FOLDER:
        (project / LOGIN_FOLDER).rmdir()
    (project / planted).symlink_to(shared)
    before = store.read_bytes()
    monkeypatch.setenv("DVC_ROOT", str(project))
    with pytest.raises(SystemExit) as exit_:
        ui.main(["--experiment", "test"])
    assert exit_.value.code == (
        f"error: the login folder {project / LOGIN_FOLDER} must not pass through a symbolic "
        f"link ({project / planted} is one): the password and keys are kept only in a real "
        "folder; remove the link, and a new login is made"
    )
    assert list(shared.iterdir()) == [] and shared.stat().st_mode & 0o7777 == 0o1777
    assert store.read_bytes() == before and store.stat().st_mode & 0o777 == 0o644
    if planted != LOGIN_FOLDER:
        assert [p.name for p in (project / LOGIN_FOLDER).iterdir()] == [Path(planted).name]
