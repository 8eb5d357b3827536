"""The next lesson's grid: one cell's numbers, the shuffled control, the report."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import small_overrides

from pipeline import data
from pipeline.analysis import faithfulness, seed_study
from pipeline.config import ConfigError, validate
from pipeline.core.measures import SCORES, model_scores
from pipeline.experiments.grid import capacity
from pipeline.experiments.grid import cell as grid
from pipeline.experiments.grid import section as next_lesson
from pipeline.experiments.grid.cell import cell_config
from pipeline.experiments.grid.section import next_lesson_section
from pipeline.models import frames
from tests.conftest import composed

SMALL = [*small_overrides(), "grid.seeds=3", "train.epochs=10", "grid.epochs=10"]


@pytest.fixture(scope="module")
def cfg():
    return validate(composed(SMALL))


def test_shuffled_steps_move_the_marker_with_its_reading_and_keep_the_label(cfg):
    frame = data.generate(cfg.data, "rise")
    shuffled = grid.shuffled_steps(frame, cfg.data.steps, seed=3)
    columns = data.reading_columns(cfg.data.steps)
    assert shuffled["label"].equals(frame["label"])
    for i in range(len(frame)):
        before, after = frame.loc[i, columns].to_numpy(), shuffled.loc[i, columns].to_numpy()
        assert sorted(before) == sorted(after)
        assert after[shuffled.loc[i, "marked_step"]] == before[frame.loc[i, "marked_step"]]
    assert not shuffled[columns].equals(frame[columns])
    assert grid.shuffled_steps(frame, cfg.data.steps, seed=3).equals(shuffled)  # seeded


def test_an_order_cell_against_its_parts(cfg):
    document = grid.run_cell(cfg, "rise", "window2")
    cell = grid.cell_config(cfg, "rise", "window2")
    frame = data.generate(cell.data, "rise")
    runs = seed_study.train_seeds(cell, frame, [1, 2, 3])
    per_seed = runs.values["heldout_accuracy"].mean(-1)
    assert document["per_seed_heldout_accuracy"] == per_seed.tolist()
    assert document["heldout_accuracy"]["mean"] == pytest.approx(float(per_seed.mean()))
    labels = data.split_frame(frame, "heldout")["label"]
    assert document["majority_baseline"] == max(labels.mean(), 1 - labels.mean())
    heldout = frames.features(data.split_frame(frame, "heldout"), cell.data.steps)
    hand = capacity.hand_set_accuracy("rise", "window2", cfg.model, heldout, cfg.data.threshold)
    assert document["hand_set_accuracy"] == hand >= 0.99
    control = seed_study.train_seeds(
        cell, grid.shuffled_steps(frame, 12, cfg.grid.shuffle_seed), [1, 2, 3]
    )
    shuffled = control.values["heldout_accuracy"].mean(-1)
    alone = seed_study.train_seeds(
        cell, grid.shuffled_steps(frame, 12, cfg.grid.shuffle_seed), [1, 2, 3], heldout_only=True
    )
    assert list(alone.values) == ["heldout_accuracy"]
    assert torch.equal(alone.values["heldout_accuracy"], control.values["heldout_accuracy"])
    assert document["shuffled"]["mean"] == pytest.approx(float(shuffled.mean()))
    difference = document["above_shuffled"]
    assert difference["mean"] == pytest.approx(float((per_seed - shuffled).mean()))
    assert difference["ci95_low"] <= difference["mean"] <= difference["ci95_high"]
    assert "heads" not in document  # one head


def test_a_cells_battery_scores_against_the_tasks_rationale(cfg):
    """rise's rationale is the marked step and the one before it: the cell's battery
    is the battery on its first seeds with that two-step mask, every metric."""
    document = grid.run_cell(cfg, "rise", "lesson")
    cell = grid.cell_config(cfg, "rise", "lesson")
    frame = data.generate(cell.data, "rise")
    runs = seed_study.train_seeds(cell, frame, [1, 2, 3])
    inputs, _, marked = frames.split_tensors(cell, frame, "heldout", "cpu", torch.float64)
    rationale = torch.zeros(len(marked), 12, dtype=torch.bool)
    rationale[torch.arange(len(marked)), marked] = True
    rationale[torch.arange(len(marked)), marked - 1] = True
    params = grid.interface.from_flat(runs.params, cell.model, 12)
    table = faithfulness.battery_tensors(params, inputs, rationale, [1, 2, 3])
    battery = document["faithfulness"]
    assert battery["seeds"] == 3 and list(battery["explainers"]["attention"]) == list(SCORES)
    for row, metrics in table.items():
        for metric, values in metrics.items():
            got = battery["explainers"][row][metric]["mean"]
            assert got == pytest.approx(float(values.mean()), rel=1e-12), (row, metric)
    # Against {m - 1, m} the marked step alone is not the rank: two steps must be found.
    assert all(e["marked_rank"]["mean"] >= 2 for e in battery["explainers"].values())


def test_a_cell_s_sanity_checks_cover_its_layer_and_reach_the_report(cfg):
    """window's layer is the cascade's last group; the section's table shows each
    explainer once every group is re-drawn, * on a pass."""
    document = grid.run_cell(cfg, "rise", "window3")
    checks = document["faithfulness"]["sanity"]
    assert list(checks["tests"]["cascading"]) == ["readout", "values", "keys", "layer"]
    assert checks["seeds"] == 3
    every = checks["tests"]["cascading"]["layer"]
    assert {"attention_rollout", "attention_flow", "random"} <= set(every)
    table = next_lesson.sanity_table([document])
    header, _, row = table.splitlines()
    assert header.split("|")[1:4] == [" task   ", " variant   ", " attention   "]
    random = every["random"]["spearman"]
    chance = "*" if random["ci95_low"] <= 0 <= random["ci95_high"] else ""
    assert row.split("|")[-2].strip() == f"{random['mean']:.2f}{chance}"


def test_two_patterns_leaves_out_the_metrics_that_do_not_apply(cfg):
    small = validate(composed([*SMALL, "grid.faithfulness_seeds=2"]))
    battery = grid.run_cell(small, "two_patterns", "lesson")["faithfulness"]
    assert battery["seeds"] == 2
    assert all(list(row) == model_scores() for row in battery["explainers"].values())


def test_a_heads_cell_has_per_head_numbers(cfg):
    document = grid.run_cell(cfg, "two_patterns", "multihead2")
    heads = document["heads"]
    assert len(heads["per_head"]) == 2 and "shuffled" not in document
    mass = torch.tensor(heads["per_seed_marker_mass"])
    entropy = torch.tensor(heads["per_seed_entropy"])
    assert mass.shape == entropy.shape == (3, 2)
    assert bool(((mass >= 0) & (mass <= 1) & (entropy >= 0) & (entropy <= 1 + 1e-12)).all())
    divided = [
        any(
            mass[s, i] >= 0.5 and entropy[s, j] >= 0.75
            for i in range(2)
            for j in range(2)
            if i != j
        )
        for s in range(3)
    ]
    assert heads["share_divided"] == pytest.approx(sum(divided) / 3)


def test_heads_summary_counts_a_focused_and_a_spread_head():
    mass = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.3, 0.3]])
    entropy = torch.tensor([[0.2, 0.9], [0.2, 0.5], [0.9, 0.9]])
    assert grid.heads_summary(mass, entropy)["share_divided"] == pytest.approx(1 / 3)


def cell(task, variant, mean, solved, hand=1.0, **extra):
    summary = {"mean": mean, "ci95_low": mean - 0.05, "ci95_high": mean + 0.05, "std": 0.1}
    summary |= {"min": 0.5, "max": 1.0, "median": mean, "q05": 0.6, "q95": 0.99}
    return {
        "task": task,
        "variant": variant,
        "seeds": 20,
        "majority_baseline": 0.55,
        "hand_set_accuracy": hand,
        "hand_set_note": None if hand is not None else "sees the steps as a set",
        "heldout_accuracy": summary | {"share_solved": solved},
        "gap_to_hand_set": None if hand is None else hand - mean,
        **extra,
    }


def test_the_reading_says_when_the_mean_and_the_solved_share_disagree():
    heads = {"per_head": [{"marker_mass": 0.9, "entropy": 0.1}], "share_divided": 0.4}
    cells = [
        cell("two_patterns", "lesson", 0.90, 0.10),
        cell("two_patterns", "multihead2", 0.85, 0.30, heads=heads),
    ]
    text = next_lesson_section(cells, [])
    assert "disagree on which is better: the answer depends on the metric" in text
    assert "The two intervals overlap" in text
    assert "With multihead2, 40% of seeds have one head focused" in text
    agreeing = next_lesson_section(
        [
            cells[0] | {"heldout_accuracy": cells[0]["heldout_accuracy"] | {"share_solved": 0.5}},
            cells[1],
        ],
        [],
    )
    assert "depends on the metric" not in agreeing


def test_the_reading_says_what_owes_to_order():
    none = {"mean": 0.0, "ci95_low": -0.01, "ci95_high": 0.01}
    some = {"mean": 0.2, "ci95_low": 0.1, "ci95_high": 0.3}
    shuffled = cell("x", "x", 0.6, 0.0)["heldout_accuracy"]
    cells = [
        cell("rise", "lesson", 0.70, 0.0, hand=None, shuffled=shuffled, above_shuffled=none),
        cell("first_half", "lesson", 0.75, 0.0, hand=None, shuffled=shuffled, above_shuffled=some),
    ]
    text = next_lesson_section(cells, ["order_accuracy.png"])
    assert "comes from the set of readings, not from where they sit" in text
    assert "that much owes to the order of the steps" in text
    caption = "Held-out accuracy per seed on the order tasks, against shuffled steps"
    assert f"![{caption}](order_accuracy.png)" in text  # a caption, not the file's name
    assert "nan" not in text


def battery(tau: tuple[float, float], hit: tuple[float, float] | None) -> dict:
    def number(low: float, high: float) -> dict:
        return {"mean": (low + high) / 2, "ci95_low": low, "ci95_high": high}

    def row(tau_range, hit_range) -> dict:
        numbers = {"tau_loo": number(*tau_range)}
        if hit_range is not None:
            numbers["hit_at_1"] = number(*hit_range)
        return numbers

    chance = row((-0.05, 0.05), None if hit is None else (0.05, 0.15))
    return {
        "seeds": 5,
        "explainers": {"attention": row(tau, hit), "loo": row((1, 1), hit), "random": chance},
    }


def test_the_faithfulness_reading_says_when_the_two_metrics_disagree():
    cells = [
        cell("first_half", "lesson", 0.6, 0.0, faithfulness=battery((-0.02, 0.04), (0.8, 0.9))),
        cell("rise", "lesson", 0.6, 0.0, faithfulness=battery((0.3, 0.4), (0.8, 0.9))),
        cell("two_patterns", "lesson", 0.8, 0.0, faithfulness=battery((0.3, 0.4), None)),
    ]
    text = next_lesson_section(cells, [])
    lines = {line.split(":**")[0]: line for line in text.splitlines() if line.startswith("- **")}
    assert "plausible, not faithful" in lines["- **first_half / lesson"]
    assert "disagree" not in lines["- **rise / lesson"]
    assert "better than random (tau_loo)" in lines["- **rise / lesson"]
    assert "hit@1 does not apply" in lines["- **two_patterns / lesson"]
    rows = [line for line in text.splitlines() if line.startswith("| two_patterns")]
    assert "does not apply" in rows[-1]  # the faithfulness table's row


def test_the_grid_stage_refuses_an_unknown_cell_in_one_line(run_entry, monkeypatch, tmp_path):
    from pipeline.experiments.grid import stage

    code, err = run_entry(lambda: stage.main(["nope", "lesson"]))
    assert code == 1 and err.strip().startswith("error: unknown task 'nope'; allowed: lesson")
    code, err = run_entry(lambda: stage.main(["rise", "transformer"]))
    assert code == 1 and "unknown model variant 'transformer'; allowed: lesson, sink" in err
    assert len(err.strip().splitlines()) == 1


def test_the_stage_writes_the_cell(monkeypatch, tmp_path, capsys):
    from pipeline.config.load import composed_yaml
    from pipeline.experiments.grid import stage

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(composed_yaml(SMALL))
    stage.main(["first_half", "lesson"])
    assert capsys.readouterr().out.startswith("first_half x lesson: held-out accuracy ")
    document = json.loads((tmp_path / "reports/grid/first_half-lesson.json").read_text())
    assert document["task"] == "first_half" and document["seeds"] == 3


def test_each_cell_is_one_parent_run_tagged_with_task_and_model(cfg, store, tmp_path):
    from dataclasses import replace

    from pipeline.config import TrackingConfig
    from pipeline.experiments.grid.cell_runs import RUNS
    from pipeline.tracking import search_parent_runs
    from pipeline.tracking.cell_runs import log_cells

    tracked = replace(cfg, tracking=TrackingConfig(uri=store, experiment="grid"))
    cells = []
    for task, variant in (("rise", "window2"), ("two_patterns", "multihead2")):
        document = grid.run_cell(cfg, task, variant)
        path = tmp_path / f"{task}-{variant}.json"
        path.write_text(json.dumps(document))
        cells.append((grid.cell_config(tracked, task, variant), document, path))
    assert [fresh for _, fresh in log_cells(tracked, cells, RUNS, "grid")] == [True, True]
    assert [fresh for _, fresh in log_cells(tracked, cells, RUNS, "grid")] == [
        False,
        False,
    ]  # logged once
    parents, _ = search_parent_runs(store, "grid-next-lesson")  # not the lesson's versions
    assert search_parent_runs(store, "grid")[0].empty
    rows = parents.set_index("tags.task")
    assert rows.loc["rise", "tags.model"] == "window2"
    assert rows.loc["rise", "params.model.window"] == "2"
    mean = cells[0][1]["heldout_accuracy"]["mean"]
    assert rows.loc["rise", "metrics.grid/heldout_accuracy/mean"] == pytest.approx(mean)
    assert "metrics.grid/above_shuffled/mean" in rows.columns
    assert rows.loc["two_patterns", "metrics.grid/heads/share_divided"] == pytest.approx(
        cells[1][1]["heads"]["share_divided"]
    )


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            "{task:nope,variant:lesson}",
            r"grid.cells.bad.task='nope': allowed: lesson, first_half, rise, suppressor, "
            "two_patterns",
        ),
        (
            "{task:rise,variant:transformer}",
            r"grid.cells.bad.variant='transformer': allowed: lesson",
        ),
    ],
)
def test_a_cell_of_an_unknown_task_or_variant_is_refused_in_one_line(cell, message):
    from pipeline.core.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        validate(composed([f"+grid.cells.bad={cell}"]))


def test_a_cell_trains_as_the_grid_says_not_as_the_lesson_does():
    """The grid's own epochs and rate (the baseline's): an experiment on the lesson's
    training leaves the cells as they are; one on the grid's moves them."""
    lesson_moved = cell_config(
        validate(composed(["train.lr=0.3", "train.epochs=50"])), "rise", "lesson"
    )
    assert (lesson_moved.train.lr, lesson_moved.train.epochs) == (0.6, 200)
    grid_moved = cell_config(
        validate(composed(["grid.lr=0.3", "grid.epochs=50"])), "rise", "lesson"
    )
    assert (grid_moved.train.lr, grid_moved.train.epochs) == (0.3, 50)
    assert grid_moved.train.seeds == [1, 2] and grid_moved.data == validate(composed([])).data


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("grid.lr=0", "invalid config value grid.lr=0.0: must be a finite number > 0"),
        ("grid.epochs=0", "invalid config value grid.epochs=0: must be an integer in 1..100000"),
    ],
)
def test_the_grid_s_training_is_checked(override, message):
    with pytest.raises(ConfigError) as error:
        validate(composed([override]))
    assert str(error.value).startswith(message)
