"""What the tracking tests share (here and in tests/browse/): `committed_state`, a
pipeline state made of the committed outputs, to log to a temporary store; and
`answering_api`, a stand-in HTTP server whose API answers a chosen status, for the
server checks of pipeline/tracking/store.py and loopback.py."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace

import pandas as pd

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
