"""The memory estimate (pipeline/memory/): every stage's peak, the grid's
cells included, refused before anything runs when over the limit, and checked
against the peaks the stages reach."""

from __future__ import annotations

import pytest

from pipeline.config import MAX_BYTES, validate
from pipeline.core.errors import ConfigError
from pipeline.memory import check_memory, estimated_bytes, stage_estimates, stage_terms
from tests.conftest import composed

TOO_BIG = [
    # Issue 49, case 6: refused by the config check (the generate stage's own bound).
    ("data.sequences=100000000 data.split=[99999640,180,180]", "data.sequences=100000000"),
    ("data.steps=10000000", "data.steps=10000000"),
    ("study.bootstrap=1000000000", "study.bootstrap=1000000000"),
    ("faithfulness.ig_steps=100000000", "faithfulness.ig_steps=100000000"),
    ("model=multihead model.heads=1000000", "model.heads=1000000"),
    ("model.d_k=100000000", "model.d_k=100000000"),
    ("model.d_v=100000000", "model.d_v=100000000"),
    ("study.seeds=1000000", "study.seeds=1000000"),
    ("study.chunk=1000000 study.seeds=1000000", "study.chunk=1000000"),
    # Issue 34, case 10: the grid was not in the estimate; 10**7 seeds ran for minutes.
    ("grid.seeds=10000000", "grid.seeds=10000000"),
    # Issue 33: captum's perturbed copies are bounded too.
    ("faithfulness.robustness_samples=1000000", "faithfulness.robustness_samples=1000000"),
    # the field's stages (their experiments' memory.py): abstraction's maps on every
    # ordered pair of held-out sequences, and fitted on abstraction.pairs
    ("abstraction.pairs=1000000000", "abstraction.pairs=1000000000"),
    ("abstraction.hidden=10000000", "abstraction.hidden=10000000"),
    ("roar.seeds=10000000", "roar.seeds=10000000"),
]


def refusal(overrides: list[str]) -> str:
    with pytest.raises(ConfigError) as err:
        check_memory(validate(composed(overrides)))
    return str(err.value)


@pytest.mark.parametrize(("overrides", "message"), TOO_BIG)
def test_configs_that_cannot_fit_in_memory_are_refused(overrides, message):
    text = refusal(overrides.split())
    assert text.startswith(f"invalid config value {message}"), text
    assert ": stage " in text and " needs about " in text, text
    assert text.endswith("more than the 8 GiB limit")
    assert "\n" not in text


def test_a_grid_too_large_names_its_cell_and_what_fills_it():
    text = refusal(["grid.seeds=10000000"])
    assert text.startswith("invalid config value grid.seeds=10000000: stage grid@first_half-")
    assert "(the per-example values: seeds 20000000 x " in text  # a study and its control


@pytest.mark.parametrize(
    "overrides",
    [[], ["model=sink"], ["model=multihead"], ["model=posenc"], ["model=window"]]
    + [["study.seeds=10000"], ["model=window", "study.seeds=10000"], ["grid.seeds=1000"]],
)
def test_the_lesson_every_variant_a_large_study_and_the_docs_grid_fit(overrides):
    assert estimated_bytes(validate(composed(overrides))) < MAX_BYTES


def test_every_computing_stage_and_every_grid_cell_has_an_estimate(torch_threads):
    torch_threads(2)  # the 2-core machine the issue measured on
    cfg = validate(composed(["grid.seeds=1000"]))
    estimates = stage_estimates(cfg)
    cells = [f"grid@{name}" for name in cfg.grid.cells]
    debate = [f"debate@{name}" for name in cfg.debate.cells]
    assert list(estimates) == [
        "generate", "train", "evaluate", "report", "study", "faithfulness",
        *cells, *debate, "erasure", "abstraction", "roar", "dynamics",
    ]  # fmt: skip
    assert estimated_bytes(cfg) == max(estimates.values())
    # The case the issue measured: window12 at 1000 seeds peaked at 4.96 GiB, where
    # the estimate, which left the grid out, said 0.81 GiB. With the battery's large
    # blocks mapped (`processes.map_large_blocks`), two runs peaked at 3.13 and 3.21
    # GiB (docs/reliability.md, case 10); the estimate covers them, within twice the
    # lower, and fits the limit.
    window12 = estimates["grid@first_half-window12"]
    assert 3.21 * 2**30 <= window12 <= 2 * 3.13 * 2**30 and window12 <= MAX_BYTES


def test_a_grid_cell_grows_with_its_seeds_and_an_order_task_trains_its_control_beside():
    def cell(name: str, *overrides: str) -> dict[str, int]:
        cfg = validate(composed(list(overrides)))
        return {term.what: term.bytes for term in stage_terms(cfg)[f"grid@{name}"]}

    small, large = cell("rise-lesson", "grid.seeds=100"), cell("rise-lesson", "grid.seeds=1000")
    assert large["the per-example values"] == 10 * small["the per-example values"]
    heads_task = cell("two_patterns-lesson", "grid.seeds=1000")
    assert large["the per-example values"] == 2 * heads_task["the per-example values"]
    # The battery scores only the first grid.faithfulness_seeds (100) seeds.
    assert large["integrated gradients"] == small["integrated gradients"]


def test_the_memory_estimate_counts_the_chunks_that_run_at_once(torch_threads):
    """Chunks on threads of our own hold their temporaries at once: two threads, two
    study chunks (the lesson's 1000 seeds are four); one chunk, one set."""

    def term(stage: str, name: str, threads: int, *overrides: str) -> int:
        torch_threads(threads)
        terms = stage_terms(validate(composed(list(overrides))))[stage]
        return next(t.bytes for t in terms if t.what == name)

    for stage, name in [("study", "training"), ("study", "step ablation")]:
        assert term(stage, name, 2) == 2 * term(stage, name, 1), name
    cell = ("grid@rise-lesson", "integrated gradients")
    assert term(*cell, 2, "grid.seeds=100") == 2 * term(*cell, 1, "grid.seeds=100")
    battery = ("faithfulness", "integrated gradients")
    assert term(*battery, 2) == 2 * term(*battery, 1)
    assert term("study", "training", 2, "study.seeds=250") == term(
        "study", "training", 1, "study.seeds=250"
    )


def test_the_debate_s_adversary_passes_shrink_as_its_candidates_grow():
    """The lesson's 144 candidates per example go 25 runs a pass; two heads' 3312, one;
    a sink's one more slot, 169 candidates of 13 slots: 19 runs. Past one run of every
    example, the examples a pass shrink."""
    from pipeline.config import ModelConfig
    from pipeline.experiments.debate.memory import debate_cell_terms
    from pipeline.memory import adversary_pass

    assert adversary_pass(ModelConfig(), 12, 100, 180) == (25, 180)
    assert adversary_pass(ModelConfig(kind="multihead", heads=2), 12, 100, 180) == (1, 180)
    sink = 25 * 144 * 12 // (169 * 13)
    assert adversary_pass(ModelConfig(kind="sink"), 12, 100, 180) == (sink, 180)
    assert adversary_pass(ModelConfig(), 12, 7, 180) == (7, 180)  # no more runs than there are
    # Three heads: 58752 candidates per example, 11 examples a pass; four: 933120, one.
    three = ModelConfig(kind="multihead", heads=3)
    assert adversary_pass(three, 12, 100, 180) == (1, 11)
    assert adversary_pass(ModelConfig(kind="multihead", heads=4), 12, 100, 180) == (1, 1)
    cfg = validate(composed())
    terms = {t.what: t for t in debate_cell_terms(cfg, "lesson", "multihead2")}
    factors = dict((label, value) for label, _, value in terms["the adversary"].factors)
    assert factors["candidates"] == 3312 and factors["runs"] == 1
    permutations = dict((label, value) for label, _, value in terms["the permutations"].factors)
    assert permutations["heads"] == 2
    four = {t.what: t for t in debate_cell_terms(cfg, "lesson", "multihead4")}
    factors = dict((label, value) for label, _, value in four["the adversary"].factors)
    assert (factors["candidates"], factors["runs"], factors["held-out"]) == (933120, 1, 1)


def test_byte_sizes_read_as_people_write_them():
    from pipeline.core.files import byte_size

    assert (byte_size(1536), byte_size(8 * 2**30), byte_size(3)) == ("1.5 KiB", "8 GiB", "3 B")


# Each stage run as DVC runs it, its peak resident memory against its estimate:
# at or above it, at most twice it. The defaults' every stage and grid cell are
# measured in the one full-size run (tests/stages/test_committed_outputs.py); here the main
# stages of multihead (its battery in 16 chunks) with the largest family of cells (a
# window layer, and an order task's control trained beside it) at 300 seeds. The
# cell's peak does not grow with its seeds, which run in chunks (808 MiB at the
# docs' 1000 seeds against 829 at 300, estimates 1264 and 1192, on one thread), and
# 1000 seeds cost 52 s more. Every cell of it is benchmarks/bench_memory.py's, whose
# runs also measured window12's cell at 1000 seeds (80 s, a peak that varies from
# run to run; its bounds are pinned above).
# The sanity checks and the cell's battery run on their first 48 seeds (3 chunks of
# 16, where the defaults' 100 are 7): they took most of the test's time (the
# Spearman ranks of the sanity checks alone 36 s of the cell's 49), and their
# chunks' temporaries, not their count, are what the estimate bounds. Measured on
# 2 cores: on one thread (as under pytest-xdist) the faithfulness stage peaked at
# 608 MiB against 1067 (1.76), the cell at 681 against 1025 (1.51), the study at
# 627 against 929 (1.48); 60 s for the stages against 100 at 100 seeds.
MEASURED = [
    (  # the report, which reads every cell, on the defaults alone
        ["model=multihead", "study.seeds=250", "grid.seeds=300", "faithfulness.ig_steps=20"]
        + ["faithfulness.sanity_seeds=48", "grid.faithfulness_seeds=48"],
        ["generate", "train", "evaluate", "study", "faithfulness"] + ["grid@rise-window2"],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("overrides", "stages"), MEASURED, ids=["multihead_grid300"])
def test_every_stage_s_estimate_is_at_least_its_peak_and_at_most_twice_it(
    tmp_path, overrides, stages
):
    from benchmarks.bench_memory import measure, project_copy

    rows = measure(project_copy(tmp_path / "project"), overrides, stages)
    assert stages is None or sorted(stage for stage, _, _ in rows) == sorted(stages)
    wrong = [
        f"{stage}: peak {peak / 2**20:.0f} MiB, estimate {estimate / 2**20:.0f} MiB"
        for stage, peak, estimate in rows
        if not peak <= estimate <= 2 * peak
    ]
    assert wrong == []


def test_a_hydra_job_too_large_for_memory_is_refused_before_work(app_in_process, tmp_path):
    from pipeline import run

    big = ["study.bootstrap=1000000000", "tracking.enabled=false", f"hydra.run.dir={tmp_path}"]
    code, out, err = app_in_process(run, *big)
    assert code == 1 and out == ""
    assert err.startswith("error: invalid config value study.bootstrap=1000000000: stage ")
    assert err.count("\n") == 1
