"""Tasks (pipeline/tasks/): their rules on the generated data, the capacity table's
hand-set models, and which models see the order of the steps."""

from __future__ import annotations

import pytest
import torch

from pipeline import data, tasks
from pipeline.config import DataConfig, ModelConfig
from pipeline.core import kinds
from pipeline.core.errors import PipelineError
from pipeline.core.kinds import VARIANTS
from pipeline.experiments.grid import capacity
from pipeline.models import frames, interface
from tests.conftest import composed

CFG = DataConfig()
TASKS = list(kinds.TASKS)


def frame_of(task: str):
    return data.generate(CFG, task)


def readings_of(frame):
    return frame[data.reading_columns(CFG.steps)].to_numpy()


def test_the_lesson_task_is_the_lessons_data():
    assert frame_of("lesson").equals(data.generate(CFG))


@pytest.mark.parametrize("task", TASKS)
def test_every_task_labels_the_same_sequences(task):
    """The same sequences; a task that shows them its own way (`observe`, the suppressor
    task's offset) shifts each sequence's readings by its step 0 reading alone."""
    lesson, other = frame_of("lesson"), frame_of(task)
    if hasattr(tasks.task_module(task), "observe"):
        columns = data.reading_columns(CFG.steps)
        shifted = other[columns].sub(other["reading_0"], axis=0).round(3)
        other = other.assign(**{column: shifted[column] for column in columns})
    assert other.drop(columns="label").equals(lesson.drop(columns="label"))


def test_each_rule_by_hand():
    readings = readings_of(frame_of("lesson"))
    marked = frame_of("lesson")["marked_step"].to_numpy()
    rows = range(len(marked))
    by_hand = {
        "lesson": [int(readings[i, marked[i]] > CFG.threshold) for i in rows],
        "two_patterns": [int(readings[i, marked[i]] > readings[i].mean()) for i in rows],
        "first_half": [int(marked[i] < CFG.steps / 2) for i in rows],
        "rise": [int(readings[i, marked[i]] > readings[i, marked[i] - 1]) for i in rows],
        "suppressor": [int(readings[i, marked[i]] > CFG.threshold) for i in rows],
    }
    for task, labels in by_hand.items():
        assert frame_of(task)["label"].tolist() == labels, task


def test_rationales_name_the_deciding_steps():
    assert tasks.task_module("lesson").rationale(5, 12) == [5]
    assert tasks.task_module("rise").rationale(5, 12) == [4, 5]
    assert tasks.task_module("two_patterns").rationale(5, 12) == list(range(12))


def test_an_unknown_task_is_refused_in_one_line():
    from pipeline.config import validate
    from pipeline.core.errors import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"task.kind='nope'.*allowed: lesson, first_half, rise, suppressor, two_patterns",
    ):
        validate(composed(["task.kind=nope"]))


# --- the capacity table -----------------------------------------------------------------


def heldout(task: str):
    return frames.features(data.split_frame(frame_of(task), "heldout"), CFG.steps)


def test_every_cell_has_a_hand_set_model_or_a_reason():
    """Each task module declares, for every variant, a hand-set model or why not."""
    for task in TASKS:
        for variant in VARIANTS:
            construction, reason = capacity.capacity(task, variant)  # raises if not one
            assert (construction is None) != (reason is None), (task, variant)


def test_a_task_that_declares_neither_is_an_error_naming_both(monkeypatch):
    import types

    toy = types.ModuleType("toy_task")
    toy.HAND_SET, toy.CANNOT = {"lesson": "marker_reading"}, {}
    monkeypatch.setitem(kinds.TASKS, "toy", toy)
    assert capacity.capacity("toy", "lesson")[0] is capacity.marker_reading
    with pytest.raises(PipelineError, match="task toy must declare variant sink in exactly one"):
        capacity.capacity("toy", "sink")


HAND_SET_CELLS = [
    (task, variant)
    for task in TASKS
    for variant in VARIANTS
    if capacity.capacity(task, variant)[0] is not None
]


@pytest.mark.parametrize("cell", HAND_SET_CELLS)
def test_each_hand_set_model_solves_its_task(cell):
    task, variant = cell
    accuracy = capacity.hand_set_accuracy(task, variant, ModelConfig(), heldout(task), 0.35)
    assert accuracy >= 0.99, cell


def test_a_hand_set_model_has_as_many_heads_as_its_kind():
    with pytest.raises(ValueError, match="2 heads set by hand, the kind has 1"):
        capacity.two_heads(ModelConfig(), CFG.steps, 0.35)


# --- order --------------------------------------------------------------------------------


def random_params(variant: str, seeds=(1, 2, 3)):
    cfg = capacity.variant_config(variant, ModelConfig())
    return interface.init_params(7, list(seeds), cfg, CFG.steps)


def permuted(inputs: torch.Tensor, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(inputs.shape[1], generator=generator) for _ in inputs])
    return inputs.gather(1, order[..., None].expand_as(inputs))


ORDER_FREE = ("lesson", "sink", "multihead2", "multihead4")
ORDERED = ("posenc_learned", "posenc_sinusoidal", "window2", "window3", "window12")


@pytest.mark.parametrize("variant", ORDER_FREE + ORDERED)
def test_only_models_with_position_see_a_permutation(variant):
    inputs, _, _ = heldout("lesson")
    params = random_params(variant)
    logits, _ = interface.forward(params, inputs)
    shuffled, _ = interface.forward(params, permuted(inputs))
    if variant in ORDER_FREE:
        torch.testing.assert_close(shuffled, logits, rtol=1e-12, atol=1e-12)
    else:
        assert (shuffled - logits).abs().max() > 1e-3


def test_without_position_the_first_half_task_is_at_best_a_coin():
    """Moving the marked step to the other half keeps every sequence's set of steps
    and flips its label: an order-free model scores a and 1 - a on the two copies,
    so on the held-out data it cannot beat the majority baseline on both."""
    inputs, labels, marked = heldout("first_half")
    half = CFG.steps // 2
    target = torch.where(marked < half, marked + half, marked - half)  # the other half
    rows = torch.arange(len(marked))
    moved = inputs.clone()
    moved[rows, marked], moved[rows, target] = inputs[rows, target], inputs[rows, marked]
    assert torch.equal(((target < half).double()), 1 - labels)
    assert max(float(labels.mean()), 1 - float(labels.mean())) > 0.5
    for variant in ORDER_FREE:
        params = random_params(variant, seeds=range(1, 9))
        original = ((interface.forward(params, inputs)[0] > 0) == (labels > 0.5)).double()
        swapped = ((interface.forward(params, moved)[0] > 0) == (labels < 0.5)).double()
        both = original.mean(-1) + swapped.mean(-1)
        torch.testing.assert_close(both, torch.ones(8, dtype=both.dtype))  # mean 0.5 < majority


def test_a_task_defined_in_a_test_is_a_plug_in(monkeypatch):
    """A toy task registered here (the rule: is the marked reading above the first
    step's?) labels the lesson's sequences, runs as a grid cell with its declared
    hand-set model and reasons, and lands in the next lesson's order section, with no
    change to the pipeline."""
    import types

    from pipeline.config import Config, validate
    from pipeline.experiments.grid import cell as grid
    from pipeline.experiments.grid.section import experiments
    from tests.conftest import small_overrides

    toy = types.ModuleType("toy_task", "above the first step")
    toy.label = lambda readings, marked, threshold: int(readings[marked] > readings[0])
    toy.rationale = lambda marked, steps: [0, marked]
    toy.GRID_VARIANTS = ("lesson",)
    toy.HAND_SET, toy.CANNOT = {}, {"lesson": "a toy's reason"}
    monkeypatch.setitem(kinds.TASKS, "toy", toy)

    cfg = validate(composed([*small_overrides(), "task.kind=toy", "grid.seeds=2"]))
    frame = data.generate(cfg.data, "toy")
    columns = data.reading_columns(cfg.data.steps)
    for _, row in frame.head(20).iterrows():
        readings = row[columns].tolist()
        assert row["label"] == int(readings[row["marked_step"]] > readings[0])
    assert "toy-lesson" in Config().grid.cells  # the grid's default cells: its declaration
    document = grid.run_cell(cfg, "toy", "lesson")
    assert document["task"] == "toy" and document["hand_set_note"] == "a toy's reason"
    assert document["hand_set_accuracy"] is None
    heads, order = experiments([document])
    assert heads == [] and order == [document]
