"""The GitHub Actions workflows (.github/workflows/), which cannot run here: checked
against GitHub's workflow schema, and against what .ci/run does.

The schema is SchemaStore's github-workflow.json (Apache-2.0, tests/schemas/
LICENSE.schemastore), as vendored by check-jsonschema 0.39.0 (sha256 d10c9f46...).
Workflows are YAML 1.2, as GitHub reads them: ruamel.yaml (DVC's YAML library)
keeps `on:` a key, where PyYAML's YAML 1.1 would read it as `true`.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json

import pytest
from jsonschema import Draft7Validator
from ruamel.yaml import YAML

from pipeline.config import PROJECT_ROOT

WORKFLOWS = sorted((PROJECT_ROOT / ".github/workflows").glob("*.yml"))
SCHEMA = PROJECT_ROOT / "tests/schemas/github-workflow.json"
SCHEMA_SHA256 = "d10c9f4656e1bd5bc6727e9b35080e017dc167154726fca93da33c7a6bd1c4f3"


def load(text: str) -> dict:
    return YAML(typ="safe", pure=True).load(io.StringIO(text))


def errors(workflow: dict) -> list[str]:
    validator = Draft7Validator(json.loads(SCHEMA.read_text()))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(workflow)]


def pr_workflow() -> dict:
    return load((PROJECT_ROOT / ".github/workflows/pr-metrics.yml").read_text())


def test_the_schema_is_the_vendored_one():
    assert hashlib.sha256(SCHEMA.read_bytes()).hexdigest() == SCHEMA_SHA256


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_each_workflow_is_valid_against_github_s_schema(path):
    workflow = load(path.read_text())
    assert "on" in workflow  # read as YAML 1.2: `on` is the key, not `true`
    assert errors(workflow) == []


def _no_runner(w: dict) -> None:
    del w["jobs"]["test-and-report"]["runs-on"]


def _misspelled_steps(w: dict) -> None:
    job = w["jobs"]["test-and-report"]
    job["step"] = job.pop("steps")


def _unknown_event(w: dict) -> None:
    w["on"] = {"pull-request": None}


def _step_with_uses_and_run(w: dict) -> None:
    w["jobs"]["test-and-report"]["steps"][0]["run"] = "echo both"


def _timeout_as_text(w: dict) -> None:
    w["jobs"]["test-and-report"]["timeout-minutes"] = "an hour"


def _bad_permission(w: dict) -> None:
    w["permissions"]["pull-requests"] = "comment"


@pytest.mark.parametrize(
    "breaks",
    [
        _no_runner,
        _misspelled_steps,
        _unknown_event,
        _step_with_uses_and_run,
        _timeout_as_text,
        _bad_permission,
    ],
)
def test_a_broken_workflow_fails_the_check(breaks):
    workflow = copy.deepcopy(pr_workflow())
    breaks(workflow)
    assert errors(workflow)


def test_a_workflow_read_as_yaml_1_1_fails_the_check():
    """PyYAML turns `on:` into `true`: the check must see the file as GitHub does."""
    import yaml

    text = (PROJECT_ROOT / ".github/workflows/pr-metrics.yml").read_text()
    assert errors(yaml.safe_load(text))


def test_the_pull_request_workflow_runs_ci_and_posts_its_diff_and_the_plots():
    """The README's test command through .ci/run (which writes the metric diff against
    HEAD~1, the base branch in a pull request's merge commit), then `dvc plots diff`
    against the same revision, posted by CML."""
    workflow = pr_workflow()
    assert list(workflow["on"]) == ["pull_request"]
    assert workflow["permissions"]["pull-requests"] == "write"
    steps = workflow["jobs"]["test-and-report"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] >= 2  # HEAD~1 exists
    scripts = [s["run"] for s in steps if "run" in s]
    assert scripts[0] == "bash .ci/run"
    ci = (PROJECT_ROOT / ".ci/run").read_text()
    assert "python -m pytest\n" in ci  # the README's test command
    assert "python -m pipeline diff HEAD~1 --all --out .ci-out/metrics-diff.md" in ci
    assert "dvc plots diff HEAD~1" in scripts[1]
    assert "cat .ci-out/metrics-diff.md" in scripts[2] and "cml comment" in scripts[2]
    assert any(s.get("uses", "").startswith("iterative/setup-cml") for s in steps)
