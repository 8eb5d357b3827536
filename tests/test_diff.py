"""pipeline diff: what changed first, then the headline metrics, then the rest."""

from __future__ import annotations

import json

from pipeline.browse import diff

PARAMS = {"params.yaml": {"train.lr": {"old": 0.6, "new": 0.3, "diff": -0.3}}}
HEADLINE = {
    "reports/headline.json": {
        "lesson.seed_gap": {"old": 0.10555555555555562, "new": 0.05, "diff": -0.0556},
        "runs.1.heldout_accuracy": {"old": 0.8888888888888888, "new": 0.8888888888888888},
    }
}
CHANGED = {
    "reports/headline.json": {
        "lesson.seed_gap": HEADLINE["reports/headline.json"]["lesson.seed_gap"]
    },
    "reports/metrics.json": {
        "seed_gap": {"old": 0.10555555555555562, "new": 0.05, "diff": -0.0556},
        "runs.1.high_weight": {"old": 81, "new": 80, "diff": -1},
    },
}
CALLS: list[tuple[str, ...]] = []


def fake_dvc(*args: str) -> str:
    CALLS.append(args)
    if args[:2] == ("params", "diff"):
        return "PARAMS TABLE" if "--md" in args else json.dumps(PARAMS)
    if "--md" in args:
        return "METRICS TABLE"
    return json.dumps(HEADLINE if "--all" in args else CHANGED)


def test_the_diff_starts_with_what_changed(monkeypatch):
    monkeypatch.setattr(diff, "dvc", fake_dvc)
    lines = diff.report("HEAD~1").splitlines()
    titles = [line for line in lines if line.startswith("## ")]
    assert titles == [
        "## Params changed: HEAD~1 -> workspace",
        "## Headline metrics (reports/headline.json)",
        "## Other metrics that changed",
        "## Every param",
        "## Every metric",
    ]
    assert lines[2] == "- params.yaml `train.lr`: 0.6 -> 0.3"
    headline = lines[lines.index("## Headline metrics (reports/headline.json)") + 2 :][:2]
    assert headline == [
        "- reports/headline.json `lesson.seed_gap`: 0.1056 -> 0.0500",
        "- reports/headline.json `runs.1.heldout_accuracy`: 0.8889 -> 0.8889",
    ]
    others = lines[lines.index("## Other metrics that changed") + 2 :][:2]
    assert others == [  # every numbers file but the headline; keys in order
        "- reports/metrics.json `runs.1.high_weight`: 81 -> 80",
        "- reports/metrics.json `seed_gap`: 0.1056 -> 0.0500",
    ]
    assert lines[-1] == "METRICS TABLE"
    # Only headline.json is a declared metrics file: the rest are compared as targets.
    metric_calls = [args for args in CALLS if args[0] == "metrics"]
    assert all("--targets" in args for args in metric_calls)
    assert any(set(diff.NUMBERS) <= set(args) for args in metric_calls)


def test_nothing_changed_says_so(monkeypatch):
    monkeypatch.setattr(diff, "dvc", lambda *args: "")
    text = diff.report("HEAD")
    assert text.count("(none)") == 5
