"""The report stage: report.md, its figures and the step-weight plot data."""

from __future__ import annotations

import copy
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from pipeline.analysis import golden, seed_study
from pipeline.config import (
    PROJECT_ROOT,
    Config,
    EvalConfig,
    PathsConfig,
    TrackingConfig,
    validate,
)
from pipeline.config.load import composed_yaml
from pipeline.core import measures
from pipeline.core.errors import ConfigError
from pipeline.experiments.faithfulness import stage as faithfulness_stage
from pipeline.experiments.study import reading as study_reading
from pipeline.models import frames
from pipeline.reporting import faithfulness_reading, figures, reading, report
from pipeline.reporting.inputs import ReportInputs
from pipeline.stages import evaluate, generate, train
from pipeline.stages import report as report_stage
from tests.conftest import composed, small_overrides, write_cells, write_records

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SECTIONS = [
    "## Reading",
    "## Data checks",
    "## Accuracy",
    "## Attention weights",
    "## Ablation",
    "## Seeds at scale",
    "## Which explanation is faithful?",
    "## The next lesson: a second head, and the order of steps",
    "## The attention debate",
    # the grid's suppressor cell; erasure, abstraction and roar have not run here
    "## Suppressor variables: attribution on a step that carries no label information",
]
FIGURES = {
    "attention_seed_1.png",
    "attention_seed_2.png",
    "weight_vs_effect.png",
    "training.png",
    "heldout_accuracy.png",
    "study_heldout_accuracy.png",
    "study_mass_vs_accuracy.png",
    "study_pair_gaps.png",
    "faithfulness_tau_vs_hit.png",
    "faithfulness_sanity.png",
}


@pytest.fixture(scope="module")
def small_lesson(small_cfg) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The small config's metrics document, step table and curves, as the files hold them."""
    frame, summary = generate.run(small_cfg)
    params, history = train.run(small_cfg, frame)
    document, steps = evaluate.run(small_cfg, frame, summary, params)
    steps = pd.read_csv(io.StringIO(steps.to_csv(index=False)))
    return json.loads(json.dumps(document)), steps, train.curves_frame(history, [1, 2])


@pytest.fixture(scope="module")
def small_study(small_cfg) -> tuple[dict, pd.DataFrame]:
    """The small config's study summary and per-seed table."""
    table, summary = seed_study.run(small_cfg, generate.run(small_cfg)[0])
    return json.loads(json.dumps(summary)), table


@pytest.fixture(scope="module")
def small_battery(small_cfg, small_study) -> tuple[dict, dict, pd.DataFrame]:
    """The small config's faithfulness.json, its study summary and per-run table."""
    frame, _ = generate.run(small_cfg)
    params, _ = train.run(small_cfg, frame)
    lesson = frames.params_to_frame(
        params, list(small_cfg.train.seeds), small_cfg.model, small_cfg.data.steps
    )
    document, seeds_frame, summary = faithfulness_stage.run(
        small_cfg, frame, lesson, small_study[1]
    )
    return json.loads(json.dumps(document)), json.loads(json.dumps(summary)), seeds_frame


@pytest.fixture(scope="module")
def committed_lesson() -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The default config's outputs committed under reports/."""
    reports = PROJECT_ROOT / "reports"
    curves = pd.read_csv(reports / "training.csv")
    document = json.loads((reports / "metrics.json").read_text())
    return document, pd.read_csv(reports / "steps.csv"), curves


def write_workdir(root: Path, small_lesson, small_study, small_battery) -> None:
    """The small config's report inputs, records and cells under `root`, the cwd."""
    document, steps, curves = small_lesson
    summary, table = small_study
    battery, battery_summary, battery_runs = small_battery
    (root / "reports/study").mkdir(parents=True)
    (root / "reports/faithfulness.json").write_text(json.dumps(battery))
    (root / "reports/study/faithfulness.json").write_text(json.dumps(battery_summary))
    battery_runs.to_parquet(root / "reports/study/faithfulness.parquet")
    (root / "reports/study/summary.json").write_text(json.dumps(summary))
    table.to_parquet(root / "reports/study/seeds.parquet")
    (root / "params.yaml").write_text(composed_yaml(small_overrides()))
    (root / "reports/metrics.json").write_text(json.dumps(document))
    steps.to_csv(root / "reports/steps.csv", index=False)
    curves.to_csv(root / "reports/training.csv", index=False)
    stages = ["train", "evaluate", "study", "faithfulness"]
    cfg = validate(composed(small_overrides()))
    write_records(cfg, stages)
    write_cells(root, cfg)


@pytest.fixture
def workdir(tmp_path, monkeypatch, small_lesson, small_study, small_battery) -> Path:
    monkeypatch.chdir(tmp_path)
    write_workdir(tmp_path, small_lesson, small_study, small_battery)
    return tmp_path


@pytest.fixture(scope="module")
def reported(tmp_path_factory, small_lesson, small_study, small_battery) -> Path:
    """A workdir after one run of the report stage (the tests below only read it)."""
    root = tmp_path_factory.mktemp("reported")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        write_workdir(root, small_lesson, small_study, small_battery)
        report_stage.main()
    return root


def stage_outputs(root: Path) -> dict[str, bytes]:
    names = ["reports/report.md", "reports/report.html", "reports/step_weights.csv"]
    names += [f"reports/figures/{name}" for name in sorted(FIGURES)]
    return {name: (root / name).read_bytes() for name in names}


def hand_document(**per_run: dict) -> dict:
    """The lesson's numbers with some per-run numbers replaced, e.g. `{"1": {...}}`."""
    document = {key: copy.deepcopy(golden.GOLDEN[key]) for key in ("data", "runs", "seed_gap")}
    document["data"]["sequences"] = 720
    for seed, changes in per_run.items():
        document["runs"][seed].update(changes)
    accuracy = [run["heldout_accuracy"] for run in document["runs"].values()]
    document["heldout_accuracy_mean"] = sum(accuracy) / len(accuracy)
    document["heldout_accuracy_std"] = 0.0
    return document


def bullet(text: str, seed: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"- **Run {seed}**"))


def test_stage_writes_every_section_and_figure(reported):
    markdown = (reported / "reports/report.md").read_text()
    assert [line for line in markdown.splitlines() if line.startswith("## ")] == SECTIONS
    assert {p.name for p in (reported / "reports/figures").iterdir()} == FIGURES
    links = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", markdown)
    assert {Path(link).name for link in links} == FIGURES
    assert all((reported / "reports" / link).is_file() for link in links)
    assert "(lesson)" not in markdown and "Not the lesson's configuration" in markdown
    assert "weight > 0.5" in markdown and "of those effect < 0.05" in markdown


def test_stage_outputs_repeat_byte_for_byte(reported, monkeypatch):
    first = stage_outputs(reported)
    monkeypatch.chdir(reported)
    report_stage.main()
    assert stage_outputs(reported) == first


def test_step_weights_are_one_mean_per_seed_and_step(reported):
    frame = pd.read_csv(reported / "reports/step_weights.csv")
    assert list(frame.columns) == ["seed", "step", "mean_weight", "run_step"]
    assert len(frame) == 2 * 12 and frame["run_step"].is_unique
    sums = frame.groupby("seed")["mean_weight"].sum()
    assert sums.to_numpy() == pytest.approx([1.0, 1.0])


def test_figures_are_pngs(reported):
    for name in FIGURES:
        png = (reported / "reports/figures" / name).read_bytes()
        assert png.startswith(PNG_SIGNATURE)
        Image.open(io.BytesIO(png)).verify()
    attention = (reported / "reports/figures/attention_seed_1.png").read_bytes()
    assert Image.open(io.BytesIO(attention)).size == (550, 600)


def test_long_seed_lists_cap_the_per_seed_figures(small_lesson):
    document, steps, curves = small_lesson
    seeds = range(1, 7)
    many = copy.deepcopy(document)
    many["runs"] = {str(seed): document["runs"]["1"] for seed in seeds}
    steps = pd.concat([steps[steps["seed"] == 1].assign(seed=seed) for seed in seeds])
    curves = pd.concat([curves[curves["seed"] == 1].assign(seed=seed) for seed in seeds])
    pngs = figures.lesson_figures(many, steps, curves, 0.5, 0.05)
    heatmaps = [f.name for f in pngs if f.name.startswith("attention_seed_")]
    assert len(heatmaps) == figures.MAX_SEEDS_SHOWN
    # The report says so, and why.
    images = {"weights": [(f.caption, f.name) for f in pngs if f.section == "weights"]}
    markdown = report.markdown_report(ReportInputs(Config(), many, steps, False, images))
    assert "Heatmaps for the first 4 of 6 runs only: one picture per run" in markdown
    single = report.markdown_report(ReportInputs(Config(), document, steps, False, images))
    assert "Heatmaps for the first" not in single


def test_stale_seed_figures_are_removed(tmp_path):
    (tmp_path / "attention_seed_9.png").write_bytes(b"old")
    (tmp_path / "notes.png").write_bytes(b"kept")
    report_stage.write_figures(tmp_path, {"attention_seed_1.png": PNG_SIGNATURE})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention_seed_1.png", "notes.png"]


def test_lesson_config_is_the_default_up_to_tracking_and_paths(default_cfg, small_cfg):
    assert golden.is_lesson_config(default_cfg)
    quiet = replace(default_cfg, tracking=TrackingConfig(enabled=False), paths=PathsConfig("x"))
    assert golden.is_lesson_config(quiet)
    assert not golden.is_lesson_config(small_cfg)
    assert not golden.is_lesson_config(replace(default_cfg, eval=EvalConfig(high_weight=0.6)))


def test_golden_values_appear_only_for_the_lesson_config(default_cfg, committed_lesson):
    lesson, *_ = report_stage.run(default_cfg, *committed_lesson)
    other_cfg = replace(default_cfg, eval=EvalConfig(low_effect=0.1))
    other, *_ = report_stage.run(other_cfg, *committed_lesson)
    assert "held-out (lesson)" in lesson and "marker mass (lesson)" in lesson
    assert "run 1 (lesson)" in lesson
    assert "Every number matches the lesson's at 4 decimals." in lesson
    assert "(lesson)" not in other and "matches the lesson" not in other
    assert "of those effect < 0.1" in other


def test_golden_mismatches_are_named():
    document = hand_document(**{"1": {"marker_mass": 0.3, "high_weight": 80}})
    sentence = reading.golden_sentence(document)
    assert sentence.startswith("2 numbers differ")
    assert "run 1 marker_mass (0.3 vs 0.2721)" in sentence and "run 1 high_weight" in sentence
    one = reading.golden_sentence(hand_document(**{"2": {"argmax_hit": 0.99}}))
    assert one.startswith("1 number differs") and "run 2 argmax_hit (0.99 vs 1.0)" in one


def test_reading_says_whether_weights_agree_with_the_ablation():
    document = hand_document(
        **{"1": {"weight_effect_agreement": 0.2}, "2": {"weight_effect_agreement": 0.95}}
    )
    text = reading.reading(document, golden=False, high=0.5, low=0.05)
    assert "The weights do not agree with the ablation" in bullet(text, "1")
    assert "in 20% of held-out sequences" in bullet(text, "1")
    assert "The weights agree with the ablation" in bullet(text, "2")
    assert "not agree" not in bullet(text, "2")
    assert "The runs tell different stories" in text


def test_reading_says_where_the_weights_point():
    uniform = golden.GOLDEN["data"]["uniform_weight"]
    flat = {"marker_mass": uniform, "argmax_hit": 0.08}
    document = hand_document(**{"1": flat})
    text = reading.reading(document, golden=False, high=0.5, low=0.05)
    assert "its weights do not point at the marked step" in bullet(text, "1")
    assert "lean towards" in reading.reading(hand_document(), False, 0.5, 0.05)
    assert "its weights point at the marked step" in bullet(text, "2")
    peaked = hand_document(**{"1": {"marker_mass": 1.1 * uniform, "argmax_hit": 1.0}})
    assert "nearly flat" in bullet(reading.reading(peaked, False, 0.5, 0.05), "1")


def test_reading_follows_baseline_high_weight_and_gap():
    weak = {"heldout_accuracy": 0.6, "high_weight": 0, "high_weight_low_effect": 0}
    document = hand_document(**{"1": weak, "2": {"high_weight_low_effect": 0}})
    document["seed_gap"] = 0.001
    text = reading.reading(document, golden=False, high=0.5, low=0.05)
    assert "does not beat the majority-class baseline 0.6333" in bullet(text, "1")
    assert "No held-out sequence puts more than 0.5" in bullet(text, "1")
    assert "All 180 sequences with a weight above 0.5" in bullet(text, "2")
    assert "a small run-to-run gap" in text
    assert "a large run-to-run gap" in reading.reading(hand_document(), False, 0.5, 0.05)
    document["runs"] = {"1": document["runs"]["1"]}
    assert "With one seed there is no run-to-run gap" in reading.reading(document, False, 0.5, 0.05)


def test_stage_refuses_metrics_of_other_seeds(workdir):
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("  - 2\n", "  - 3\n", 1))
    with pytest.raises(
        ConfigError, match=r"made by the train stage .* \(train.seeds \[1, 2\]→\[1, 3\]"
    ):
        report_stage.main()


def test_missing_input_is_a_clear_error(tmp_path, monkeypatch, run_entry):
    (tmp_path / "params.yaml").write_text(composed_yaml(small_overrides()))
    monkeypatch.chdir(tmp_path)
    code, stderr = run_entry(report_stage.main)
    assert code == 1
    assert stderr == "error: missing reports/provenance/train.json: run `dvc repro` first\n"


def hand_summary(share: float, percentile: float) -> dict:
    spread = {key: 0.5 for key in ("mean", "std", "min", "max", "median", "q05", "q95")}
    spread |= {"ci95_low": 0.4, "ci95_high": 0.6}
    summary = {"seeds": 100, **{name: dict(spread) for name in measures.means()}}
    summary["share_marker_mass_above_half"] = 0.25
    summary["pair_gap"] = {"observed": 0.1056, "mean": 0.03, "p_at_least_observed": share}
    summary["lesson_seeds"] = {"1": {"heldout_accuracy": 0.8889, "percentile": percentile}}
    return summary


def test_study_reading_says_what_each_number_measures():
    table = pd.DataFrame({"argmax_hit": [1.0, 1.0, 0.2], "marker_mass": [0.3, 0.9, 0.1]})
    text = study_reading.study_reading(hand_summary(0.02, 0.03), table)
    assert "2% of the 4950 pairs of seeds differ by at least the lesson's gap 0.1056" in text
    assert "a gap that large is rare" in text
    assert "run 1 (held-out 0.8889) beats 3% of the study's seeds: an unlucky seed" in text
    assert "25% of the seeds put more than half of their held-out weight" in text
    # Seed 1 of the table: its top weight finds the step, its mass does not.
    assert "The two measures disagree on 1 seeds (1%)" in text
    common = study_reading.study_reading(hand_summary(0.4, 0.95), table.iloc[1:])
    assert "a gap that large is common" in common and "a lucky seed" in common
    assert "disagree" not in common


def test_stage_refuses_a_study_of_another_size(workdir):
    params = workdir / "params.yaml"
    params.write_text(params.read_text().replace("seeds: 4", "seeds: 5"))
    with pytest.raises(ConfigError, match="made by the study stage .*study.seeds 4→5"):
        report_stage.main()


def committed_battery() -> tuple[dict, dict]:
    reports = PROJECT_ROOT / "reports"
    document = json.loads((reports / "faithfulness.json").read_text())
    return document, json.loads((reports / "study/faithfulness.json").read_text())


def test_faithfulness_reading_names_where_metrics_disagree():
    higher = measures.higher_is_better()
    document, summary = committed_battery()
    text = "\n\n".join(faithfulness_reading.faithfulness_reading(document, summary, higher))
    for key, score in measures.SCORES.items():
        assert f"- **{score.label}** (`{key}`): " in text  # what each number measures
    assert "Attention's tau_loo is 0.9302 on run 1 and 0.0136 on run 2" in text
    assert "its hit@1 is 0.3444 and 1.0000: the two disagree" in text
    # Paired, with intervals: a winner only where the interval leaves out 0.
    assert "| tau with leave-one-out | higher | gradient | value_norm | +0.4563 [0.4133" in (
        squeezed(text)
    )
    assert "| hit@1 | higher | grad_x_input | loo | +0.0025 [-0.0024, 0.0075] (no difference)" in (
        squeezed(text)
    )
    assert "| hit@1 | loo | 43% | 8% | loo | 0.0156 [0.0076, 0.0239] |" in squeezed(text)
    moved = copy.deepcopy(summary)
    entry = moved["paired"]["hit_at_1"]["loo vs grad_x_input"]
    entry.update(difference=-0.01, ci95_low=-0.02, ci95_high=-0.005)
    table = faithfulness_reading.best_against_next(moved, higher)
    assert table.loc["hit@1"].tolist() == [
        "higher",
        "grad_x_input",
        "loo",
        "+0.0100 [0.0050, 0.0200]",
        "35% / 36%",
    ]


def squeezed(text: str) -> str:
    """Markdown tables with their padding taken out: `| a | b |`."""
    return re.sub(r" *\| *", " | ", text)


def test_an_amount_and_its_interval_share_their_sign_in_the_better_direction():
    """Issue 50, item 6: "attention beats grad_x_input by 0.4499" came with the
    interval [-0.8555, -0.0555] (flips_to_decision, lower is better). By hand: the
    stored difference attention - grad_x_input is -0.45 [-0.86, -0.06]; fewer flips
    is better, so attention is ahead by 0.45 [0.06, 0.86]."""
    entry = {
        "difference": -0.45,
        "ci95_low": -0.86,
        "ci95_high": -0.06,
        "share_first_better": 0.7,
        "share_second_better": 0.3,
    }
    clause = faithfulness_reading.paired_clause("attention", "grad_x_input", entry, higher=False)
    assert clause == (
        "attention beats grad_x_input by 0.4500 [0.0600, 0.8600] (attention better on 70% "
        "of seeds, grad_x_input on 30%)"
    )
    behind = faithfulness_reading.paired_clause("attention", "grad_x_input", entry, higher=True)
    assert behind.startswith("grad_x_input beats attention by 0.4500 [0.0600, 0.8600]")
    tie = dict(entry, difference=0.01, ci95_low=-0.02, ci95_high=0.05)
    assert "ahead by -0.0100 [-0.0500, 0.0200], an interval that covers 0" in (
        faithfulness_reading.paired_clause("attention", "loo", tie, higher=False)
    )


def test_the_committed_report_reads_as_a_teacher_would_want():
    """Issue 50, item 6: headers carry the registry's labels, the comparisons stand in
    tables, and every paired amount shares its interval's sign."""
    markdown = (PROJECT_ROOT / "reports/report.md").read_text()
    headers = [line for line in markdown.splitlines() if line.startswith("|") and "---" not in line]
    for key in measures.SCORES:
        assert not any(f" {key} " in f" {line} " for line in headers if "|" in line[1:]), key
    section = markdown.split("## Which explanation is faithful?")[1].split("\n## ")[0]
    # The old paragraph held 12 comparisons, each with two shares of seeds: 24 "%".
    prose = [line for line in section.splitlines() if not line.startswith("|")]
    assert max(line.count("%") for line in prose) <= 4
    for number, low, high in re.findall(
        r"by (-?\d\.\d{4}) (?:\(\w+ - \w+ )?\[(-?\d\.\d{4}), (-?\d\.\d{4})\]", markdown
    ):
        if not float(low) <= 0 <= float(high):
            assert (float(number) > 0) == (float(low) > 0) == (float(high) > 0), number
