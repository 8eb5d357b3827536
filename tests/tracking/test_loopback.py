"""Waiting for a server we start (pipeline/tracking/loopback.py): another server
answering on its port is not taken for it."""

from __future__ import annotations

import subprocess

import pytest

from pipeline.core.errors import PipelineError
from tests.tracking.helpers import answering_api


def test_a_server_answering_on_the_port_that_is_not_the_one_started_is_refused(tmp_path):
    from pipeline.tracking.loopback import wait_serving

    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)  # listens nowhere
    try:
        with (
            answering_api(200) as uri,
            pytest.raises(PipelineError, match="another server answers at") as err,
        ):
            wait_serving(uri, stand_in, tmp_path / "log", timeout=10)
        assert str(err.value) == (
            f"another server answers at {uri}, not the mlflow server started here "
            f"(log: {tmp_path / 'log'})"
        )
    finally:
        stand_in.kill()
        stand_in.wait()
