"""pipeline diff: what changed first, then the headline metrics, then the rest."""

from __future__ import annotations

import json

import pytest

from pipeline.browse import diff

PARAMS = {"params.yaml": {"train.lr": {"old": 0.6, "new": 0.3, "diff": -0.3}}}
HEADLINE = {
    "reports/headline.json": {
        "lesson.seed_gap": {"old": 0.10555555555555562, "new": 0.05, "diff": -0.0556},
        "runs.1.heldout_accuracy": {"old": 0.8888888888888888, "new": 0.8888888888888888},
    }
}
CALLS: list[tuple[str, ...]] = []


EVERYTHING = {
    **HEADLINE,
    "reports/metrics.json": {
        "seed_gap": {"old": 0.10555555555555562, "new": 0.05, "diff": -0.0556},
        "runs.1.high_weight": {"old": 81, "new": 80, "diff": -1},
        "runs.1.heldout_accuracy": {"old": 0.8888888888888888, "new": 0.8888888888888888},
    },
}


def fake_dvc(*args: str) -> str:
    CALLS.append(args)
    if args[:2] == ("params", "diff"):
        return "PARAMS TABLE" if "--md" in args else json.dumps(PARAMS)
    if "--md" in args:
        return "METRICS TABLE"
    return json.dumps(EVERYTHING)


def test_the_diff_fits_a_screen_what_changed_first(monkeypatch):
    monkeypatch.setattr(diff, "dvc", fake_dvc)
    lines = diff.report("HEAD~1").splitlines()
    titles = [line for line in lines if line.startswith("## ")]
    assert titles == [
        "## Params changed: HEAD~1 -> workspace",
        "## Headline metrics (reports/headline.json)",
        "## Every numbers file",
    ]
    assert lines[2] == "- params.yaml `train.lr`: 0.6 -> 0.3"
    table = lines[lines.index("## Headline metrics (reports/headline.json)") + 2 :][:4]
    assert table == [
        "| metric | HEAD~1 | workspace | change |",
        "|---|---:|---:|---:|",
        "| lesson.seed_gap | 0.1056 | 0.0500 | -0.0556 |",
        "| runs.1.heldout_accuracy | 0.8889 | 0.8889 | +0.0000 |",
    ]
    files = lines[lines.index("## Every numbers file") + 2 :]
    assert files[:2] == [
        "- reports/headline.json: 1 of 2 values changed, by at most 0.05556",
        "- reports/metrics.json: 2 of 3 values changed, by at most 1",
    ]
    assert files[2] == "- reports/study/summary.json: 0 of 0 values changed"
    assert len(lines) < 40  # a screen
    # Only headline.json is a declared metrics file: the rest are compared as targets.
    metric_calls = [args for args in CALLS if args[0] == "metrics"]
    assert all("--targets" in args for args in metric_calls)
    assert any(set(diff.NUMBERS) <= set(args) for args in metric_calls)


def test_all_adds_every_changed_metric_and_dvc_s_tables(monkeypatch):
    monkeypatch.setattr(diff, "dvc", fake_dvc)
    lines = diff.report("HEAD~1", full=True).splitlines()
    titles = [line for line in lines if line.startswith("## ")]
    assert titles[3:] == ["## Other metrics that changed", "## Every param", "## Every metric"]
    others = lines[lines.index("## Other metrics that changed") + 2 :][:3]
    assert others == [  # every numbers file but the headline; changed keys, in order
        "- reports/metrics.json `runs.1.high_weight`: 81 -> 80",
        "- reports/metrics.json `seed_gap`: 0.1056 -> 0.0500",
        "",
    ]
    assert lines[-1] == "METRICS TABLE"


def test_nothing_changed_says_so(monkeypatch):
    monkeypatch.setattr(diff, "dvc", lambda *args: "")
    text = diff.report("HEAD", full=True)
    assert text.count("(none)") == 5


def test_diff_refuses_its_out_file_in_one_line_before_computing(capsys):
    with pytest.raises(SystemExit) as exit_:
        diff.main(["HEAD", "--out", "mlflow.db"])
    assert str(exit_.value.code).startswith("error: --out mlflow.db: not written there (the store")
