"""What each light entry point loads: one fresh interpreter for every probe.

The modules are imported from the lightest to the heaviest, so each step sees only
what its own imports added. The track stage runs on every `dvc repro` and must
start fast; the generate stage needs no torch; only the modules in
pipeline/tracking/ talk to MLflow and only pipeline.figures draws.
"""

from __future__ import annotations

import json
import subprocess
import sys

from pipeline.config import PROJECT_ROOT

HEAVY = ("matplotlib", "mlflow", "pandas", "torch")
STEPS = [
    ("pipeline.stages.track",),
    ("pipeline.stages.generate",),
    (
        "pipeline.data",
        "pipeline.models.lesson",
        "pipeline.models.train",
        "pipeline.analysis.metrics",
        "pipeline.reporting.report",
        "pipeline.stages.evaluate",
        "pipeline.stages.train",
    ),
]
PROBE = """
import importlib, json, sys
loaded = []
for modules in json.loads(sys.argv[1]):
    for module in modules:
        importlib.import_module(module)
    loaded.append(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules))
print(json.dumps(loaded))
"""


def test_light_entry_points_load_no_heavy_library():
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(STEPS), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    track, generate, lesson = json.loads(result.stdout)
    assert track == []
    assert generate == ["pandas"]
    assert "mlflow" not in lesson and "matplotlib" not in lesson


def test_only_modules_in_pipeline_tracking_import_mlflow():
    tracking = PROJECT_ROOT / "pipeline" / "tracking"
    for path in (PROJECT_ROOT / "pipeline").rglob("*.py"):
        source = path.read_text()
        if tracking not in path.parents:
            assert "import mlflow" not in source and "from mlflow" not in source, path
