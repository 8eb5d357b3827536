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
import re

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
    del w["jobs"]["test"]["runs-on"]


def _misspelled_steps(w: dict) -> None:
    job = w["jobs"]["test"]
    job["step"] = job.pop("steps")


def _unknown_event(w: dict) -> None:
    w["on"] = {"pull-request": None}


def _step_with_uses_and_run(w: dict) -> None:
    w["jobs"]["test"]["steps"][0]["run"] = "echo both"


def _timeout_as_text(w: dict) -> None:
    w["jobs"]["test"]["timeout-minutes"] = "an hour"


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
    against the same revision, handed to a second job that posts it with CML."""
    workflow = pr_workflow()
    assert list(workflow["on"]) == ["pull_request"]
    steps = workflow["jobs"]["test"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] >= 2  # HEAD~1 exists
    scripts = [s["run"] for s in steps if "run" in s]
    assert scripts[0] == "bash .ci/run"
    ci = (PROJECT_ROOT / ".ci/run").read_text()
    assert "python -m pytest\n" in ci  # the README's test command
    assert "python -m pipeline diff HEAD~1 --all --out .ci-out/metrics-diff.md" in ci
    assert "dvc plots diff HEAD~1" in scripts[1]
    assert "cat .ci-out/metrics-diff.md" in scripts[2] and "> .ci-out/report.md" in scripts[2]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    comment = workflow["jobs"]["comment"]
    download = next(
        s for s in comment["steps"] if s.get("uses", "").startswith("actions/download-artifact")
    )
    assert download["with"]["name"] == upload["with"]["name"]
    assert download["with"]["path"] == ".ci-out"
    assert "cml comment update" in comment["steps"][-1]["run"]
    assert ".ci-out/report.md" in comment["steps"][-1]["run"]
    assert any(s.get("uses", "").startswith("iterative/setup-cml") for s in comment["steps"])


def uses(workflow: dict) -> list[str]:
    return [s["uses"] for job in workflow["jobs"].values() for s in job["steps"] if "uses" in s]


def test_every_action_is_pinned_by_a_full_commit_sha():
    """A tag can be moved to other code; a commit SHA cannot (third-party
    iterative/setup-cml included). The tag it was stays as a comment."""
    text = (PROJECT_ROOT / ".github/workflows/pr-metrics.yml").read_text()
    pinned = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")
    found = uses(pr_workflow())
    assert len(found) >= 5
    for action in found:
        assert pinned.match(action), f"{action} is not pinned by a commit SHA"
        assert re.search(re.escape(action) + r"  # v\d+\.\d+\.\d+\n", text), action


def test_the_pull_request_s_code_runs_without_a_write_token_or_a_kept_credential():
    """The job that runs .ci/run (the pull request's code) may only read, and
    checkout leaves no token in .git/config; the one write permission belongs to the
    job that runs none of that code (no checkout, no .ci/run)."""
    workflow = pr_workflow()
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    runs_code = [
        name
        for name, job in jobs.items()
        if any("run" in s and ".ci/run" in s["run"] for s in job["steps"])
    ]
    assert runs_code == ["test"]
    assert jobs["test"]["permissions"] == {"contents": "read"}
    for job in jobs.values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False
    comment = jobs["comment"]
    assert comment["permissions"] == {"pull-requests": "write"}
    assert comment["needs"] == "test"
    assert not any(s.get("uses", "").startswith("actions/checkout") for s in comment["steps"])
    assert "secrets." not in str(jobs["test"])


def test_a_fork_s_pull_request_skips_the_comment_and_keeps_the_report():
    """GitHub gives a fork's pull request a read-only token: the comment job is
    guarded, and the report is the test job's summary instead."""
    workflow = pr_workflow()
    guard = workflow["jobs"]["comment"]["if"]
    assert guard == "github.event.pull_request.head.repo.full_name == github.repository"
    assert any(
        '"$GITHUB_STEP_SUMMARY"' in s.get("run", "") for s in workflow["jobs"]["test"]["steps"]
    )
