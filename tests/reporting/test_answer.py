"""The closing summary of `dvc repro` (printed by the track stage)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

from pipeline.config import PROJECT_ROOT, Config, TrainConfig
from pipeline.reporting import answer, summary

REPORTS = PROJECT_ROOT / "reports"


def committed() -> tuple[dict, dict]:
    return (
        json.loads((REPORTS / "metrics.json").read_text()),
        json.loads((REPORTS / "study/summary.json").read_text()),
    )


def test_the_answer_has_each_runs_numbers_the_gap_and_where_to_look():
    metrics, study = committed()
    text = answer.answer(Config(), metrics, {"study": study}, "UI-COMMAND").splitlines()
    for seed, run in metrics["runs"].items():
        row = next(line for line in text if line.startswith(f"run {seed} "))
        shown = [float(cell) for cell in row.split()[2:]]
        assert shown == [round(run[m.key], 4) for m in answer.columns()]
    gap = metrics["seed_gap"]
    assert f"run-to-run gap {gap:.4f} in held-out accuracy ({round(gap * 180)} of 180" in (
        "\n".join(text)
    )
    assert summary.study_line(study) in text
    assert (
        "== the report: reports/report.md (one page with its figures: reports/report.html)" in text
    )
    assert (
        "== the next lesson (a second head, the order of steps): reports/report.md, "
        "section 'The next lesson'" in text
    )
    assert text[-1].endswith("UI-COMMAND")
    # An experiment's lines come from its folder, where it has a summary module.
    assert text.index("== the seed study (reports/study/summary.json)") > text.index(
        "== the report: reports/report.md (one page with its figures: reports/report.html)"
    )
    # Every column says what it measures.
    assert all(any(line.startswith(f"  {m.short}: ") for line in text) for m in answer.columns())


def test_the_golden_check_names_what_differs_and_when_it_applies():
    metrics, _ = committed()
    assert answer.golden_line(Config(), metrics).endswith("matches at 4 decimals")
    changed = copy.deepcopy(metrics)
    changed["runs"]["1"]["high_weight"] = 82
    assert answer.golden_line(Config(), changed) == (
        "golden check: 1 number differs from the lesson's: run 1 high_weight (82 vs 81)"
    )
    other = replace(Config(), train=TrainConfig(lr=0.3))
    assert "not the lesson's settings" in answer.golden_line(other, metrics)
