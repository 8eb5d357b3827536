"""Open MLflow's UI on the answer: `python -m pipeline ui [--open]`.

Starts `mlflow ui` on 127.0.0.1 (one worker) over the project's store, waits until
it answers, prints the link to the experiment's saved gap view (the run-to-run
gap across versions) and serves until Ctrl-C. It asks for a login
(pipeline/tracking/auth.py): user admin, the password in .mlflow-auth/password.

The address it prints is http://mlflow.localhost:<port>: browsers resolve any
*.localhost name to loopback themselves (RFC 6761), and MLflow 3.17's Assistant
panel opens itself in a new browser only on the hostnames localhost, 127.0.0.1
and ::1 (the UI's own check, with no server setting), where it covers the
table's right-hand columns.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.core.errors import PipelineError
from pipeline.core.processes import start_server_child
from pipeline.tracking.auth import APP_NAME, Login
from pipeline.tracking.loopback import check_port_free, free_port, stop_on_signals, wait_serving

START_TIMEOUT_S = 120
UI_HOST = "mlflow.localhost"  # loopback, under a name the Assistant does not open on
LOGIN_FOLDER = ".mlflow-auth"  # beside the store


@contextmanager
def mlflow_ui(
    store: Path, login: Login, artifacts: Path | None = None, port: int | None = None
) -> Iterator[str]:
    """`mlflow ui` over a SQLite store on a loopback port, behind `login`; yields its
    base URL, http://mlflow.localhost:<port> (127.0.0.1 and localhost answer too)."""
    port = port or free_port()
    hosts = [f"{host}:{port}" for host in (UI_HOST, "127.0.0.1", "localhost")]
    command = [
        sys.executable, "-m", "mlflow", "ui",
        "--backend-store-uri", f"sqlite:///{Path(store).resolve()}",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--app-name", APP_NAME,
        # Its host check and CORS check know localhost and 127.0.0.1, not this name.
        "--allowed-hosts", ",".join(hosts),
        "--cors-allowed-origins", f"http://{UI_HOST}:{port}",
    ]  # fmt: skip
    if artifacts is not None:
        command += ["--default-artifact-root", Path(artifacts).resolve().as_uri()]
    fd, name = tempfile.mkstemp(prefix="mlflow-ui-", suffix=".log")
    log = Path(name)
    # No GenAI job consumers: the pipeline has none, and they outlive the UI.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **login.server_env()}
    with os.fdopen(fd, "wb") as sink:
        # Stopped by SIGTERM (which it passes on to uvicorn) when this process dies,
        # kill -9 included: a killed `pipeline ui` leaves nothing serving.
        server = start_server_child(command, sink, signal.SIGTERM, env=env)
    try:
        # Probed by address: a system resolver need not know *.localhost names.
        wait_serving(f"http://127.0.0.1:{port}", server, log, START_TIMEOUT_S)
    except BaseException:
        _stop_server(server)
        raise  # the log is kept: the error names it
    try:
        yield f"http://{UI_HOST}:{port}"
    finally:  # Ctrl-C or SIGTERM included: the UI served, so its log goes
        _stop_server(server)
        log.unlink(missing_ok=True)


def _stop_server(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


def runs_url(base: str, experiment_id: str, mode: str = "TABLE", view: str | None = None) -> str:
    """The experiment's training-runs view: `workflowType=machine_learning` opens
    it instead of the GenAI overview (MLflow 3 remembers the choice per browser);
    `view` names a view saved on the experiment (pipeline.tracking.view.GAP_VIEW)."""
    shared = f"&viewStateShareKey={view}" if view else ""
    return (
        f"{base}/#/experiments/{experiment_id}/runs"
        f"?workflowType=machine_learning&compareRunsMode={mode}{shared}"
    )


def main(argv: list[str] | None = None) -> None:
    from pipeline.config import TrackingConfig
    from pipeline.tracking.auth import check_no_link, login
    from pipeline.tracking.store import experiment_id as find_experiment
    from pipeline.tracking.store import keep_private, store_root
    from pipeline.tracking.view import GAP_VIEW, save_gap_view

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default=TrackingConfig().experiment)
    parser.add_argument("--port", type=int, help="default: a free port")
    parser.add_argument("--open", action="store_true", help="open the link in a browser")
    args = parser.parse_args(argv)
    store = store_root() / "mlflow.db"
    if not store.exists():
        # `dvc repro` alone does not log again after `rm mlflow.db`: DVC cannot see it.
        sys.exit(f"error: no MLflow store at {store}: run `dvc repro -sf track`")
    try:
        check_no_link(store.parent, LOGIN_FOLDER)  # before anything is written
    except PipelineError as err:
        sys.exit(f"error: {err}")
    keep_private(f"sqlite:///{store}")  # a store made before it was private
    try:
        experiment_id = find_experiment(f"sqlite:///{store}", args.experiment)
    except PipelineError as err:  # a corrupt or foreign file: one line, not 80
        sys.exit(f"error: {err}")
    if experiment_id is None:
        sys.exit(f"error: no experiment {args.experiment!r} in {store}: run `dvc repro` first")
    save_gap_view(f"sqlite:///{store}", experiment_id)
    stop_on_signals()
    try:
        if args.port:
            check_port_free("127.0.0.1", args.port)
        owner = login(store.parent / LOGIN_FOLDER)
        with mlflow_ui(store, owner, store.parent / "mlartifacts", args.port) as base:
            link = runs_url(base, experiment_id, view=GAP_VIEW)
            print(f"MLflow UI at {base} ({owner.how_to_log_in()}); the gap across versions:")
            print(f"{link}\nCtrl-C stops it.")
            sys.stdout.flush()
            if args.open:
                webbrowser.open(link)
            while True:
                signal.pause()
    except PipelineError as err:
        sys.exit(f"error: {err}")
    except KeyboardInterrupt:
        print("stopped")


if __name__ == "__main__":
    main()
