"""The experiments are plug-ins: one folder and one registry line put a new one in every
framework (pipeline/experiments/__init__.py). A toy experiment (tests/toy_experiment/),
registered in a fresh interpreter, reaches the config and its checks, conf/ and
params.yaml, the memory bound, report.md, headline.json, MLflow's metrics and dvc.yaml."""

from __future__ import annotations

import json
import subprocess
import sys

from pipeline.config import PROJECT_ROOT

PROBE = """
import json, shutil, sys, tempfile
from pathlib import Path
from pipeline.core import kinds
kinds.register_experiment("top_weight", "tests.toy_experiment")

from pipeline.config import ConfigError, compose, validate
from pipeline.config.conf_files import written
from pipeline.config.results import experiment_results
from pipeline.config.schema import CONF_DIR
from pipeline.memory import stage_estimates
from pipeline.reporting.headline import headline
from pipeline.reporting.report import experiments
from pipeline.reporting.inputs import ReportInputs
from pipeline.stages.dvc_yaml import generated
from pipeline.tracking.runs import experiment_metrics, parent_metrics

seen = {}
conf = Path(tempfile.mkdtemp()) / "conf"
shutil.copytree(CONF_DIR, conf)
for path, text in written(conf).items():
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
seen["conf"] = (conf / "top_weight/lesson.yaml").read_text()
seen["config_yaml"] = "  - top_weight: lesson" in (conf / "config.yaml").read_text()
cfg = validate(compose())
seen["settings"] = [cfg.top_weight.high, cfg.paths.top_weight]
for override in ("+top_weight.high=2", "+top_weight.note="):
    try:
        validate(compose([override]))
    except ConfigError as err:
        seen[override] = str(err)
seen["memory"] = "top_weight" in stage_estimates(cfg)
document = {"runs": {"1": 0.25, "2": 0.75}}
inputs = ReportInputs(cfg, {}, None, False, experiments={"top_weight": document})
seen["report"] = experiments(inputs)
seen["headline"] = headline({"seed_gap": 0, "heldout_accuracy_mean": 0, "runs": {}},
    {"top_weight": document})
seen["run_metrics"] = experiment_metrics({"top_weight": document}, "2")
seen["dvc_yaml"] = generated((Path.cwd() / "dvc.yaml").read_text())
seen["results"] = list(experiment_results(cfg))
print(json.dumps(seen))
"""


def test_a_toy_experiment_is_one_folder_and_one_registry_line():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["conf"] == (
        "# The toy experiment (tests/toy_experiment/): each lesson run's largest weight.\n"
        "high: 0.5  # a largest weight above this counts as high\nnote: toy\n"
    )
    assert seen["config_yaml"]
    assert seen["settings"] == [0.5, "reports/top_weight"]
    assert seen["+top_weight.high=2"] == (
        "invalid config value top_weight.high=2.0: must be in (0, 1)"
    )
    assert seen["+top_weight.note="].startswith("invalid config value top_weight.note")
    assert seen["memory"]
    assert seen["report"] == [
        "## Largest weights\n\nMean largest pooling weight: run 1 0.2500, run 2 0.7500."
    ]
    assert seen["headline"]["top_weight"] == {"1": 0.25, "2": 0.75}
    assert seen["run_metrics"] == {"top_weight": 0.75}
    stanza = seen["dvc_yaml"].split("  top_weight:\n", 1)[1].split("\n\n", 1)[0]
    assert "    cmd: python -m tests.toy_experiment.stage\n" in stanza
    assert "      - tests/toy_experiment/\n" in stanza  # its code, generated
    assert seen["results"][-1] == "top_weight"
