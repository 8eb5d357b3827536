"""What the tracking tests share (here and in tests/browse/): `committed_state`, a
pipeline state made of the committed outputs, to log to a temporary store; and
`answering_api`, a stand-in HTTP server whose API answers a chosen status, for the
server checks of pipeline/tracking/store.py and loopback.py; and `count_requests`,
which counts the HTTP requests a check makes (here and in tests/scaleout/)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import pytest

from pipeline import tracking
from pipeline.config import PROJECT_ROOT, TrackingConfig

REPORTS = PROJECT_ROOT / "reports"


def committed_state(cfg, uri: str, **tags: str) -> tracking.PipelineState:
    cfg = replace(cfg, tracking=TrackingConfig(uri=uri, experiment="test"))
    curves = pd.read_csv(REPORTS / "training.csv")
    return tracking.PipelineState(
        cfg=cfg,
        metrics=json.loads((REPORTS / "metrics.json").read_text()),
        curves=curves,
        tags={"git.commit": "abc1234def", "git.dirty": "False", **tags},
        artifacts=[REPORTS / "metrics.json"],
        experiments={
            "study": json.loads((REPORTS / "study/summary.json").read_text()),
            "faithfulness": {
                "runs": json.loads((REPORTS / "faithfulness.json").read_text()),
                "study": json.loads((REPORTS / "study/faithfulness.json").read_text()),
            },
            "dynamics": json.loads((REPORTS / "dynamics/dynamics.json").read_text()),
        },
    )


@contextlib.contextmanager
def answering_api(status: int):
    """A tiny HTTP server on a loopback port: /health answers 200, the rest `status`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200 if self.path == "/health" else status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = answer

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def counted(calls: dict[str, int], key: str, function: Callable) -> Callable:
    """`function`, adding one to `calls[key]` at each call."""

    def call(*args, **kwargs):
        calls[key] += 1
        return function(*args, **kwargs)

    return call


def count_requests(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int]) -> None:
    """Count every HTTP request (urllib's) in `calls["request"]` and every one through
    MLflow's client in `calls["mlflow"]`: a server check that fails at once makes one
    request and none through MLflow's client, which retries for minutes."""
    import urllib.request

    from mlflow.utils import rest_utils

    monkeypatch.setattr(
        urllib.request, "urlopen", counted(calls, "request", urllib.request.urlopen)
    )
    monkeypatch.setattr(
        rest_utils, "http_request", counted(calls, "mlflow", rest_utils.http_request)
    )
