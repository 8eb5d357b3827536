"""A pipeline state (pipeline/tracking/state.py): its digest over every experiment
document and the metrics it makes of the sanity checks."""

from __future__ import annotations

from pipeline import tracking
from tests.tracking.helpers import committed_state


def test_the_sanity_checks_reach_mlflow_as_one_mean_per_test_step_and_row():
    from pipeline.experiments.grid.cell_runs import cell_metrics
    from pipeline.tracking.state import sanity_metrics

    entry = {"spearman": {"mean": 0.25, "ci95_low": 0.1}, "spearman_abs": {"mean": 0.3}}
    sanity = {
        "seeds": 2,
        "groups": {"readout": ["w", "b"]},
        "tests": {"cascading": {"readout": {"attention": entry}}},
    }
    assert sanity_metrics(sanity, "faithfulness/sanity/") == {
        "faithfulness/sanity/cascading/readout/attention": 0.25
    }
    document = {"seeds": 2, "faithfulness": {"seeds": 2, "sanity": sanity}}
    assert cell_metrics(document) == {
        "grid/seeds": 2.0,
        "grid/faithfulness/seeds": 2.0,
        "grid/sanity/cascading/readout/attention": 0.25,
    }
    assert "sanity" in document["faithfulness"]  # the document itself is left as it was


def test_the_digest_holds_every_experiment_document_as_the_track_stage_reads_them(default_cfg):
    """The track stage's no-op check digests the documents it reads from disk
    (config.results.experiment_results); the logged state digests its own. Each
    document must move the state's digest, the same way: a state whose digest left
    out abstraction and roar was never found by the check, so every `dvc repro` of the
    track stage imported mlflow (CI caught it)."""
    from pipeline.core.kinds import EXPERIMENTS

    state = committed_state(default_cfg, "sqlite:///unused.db")
    documents = {stage: {"stage": stage, "value": 1} for stage in EXPERIMENTS}
    state.experiments = dict(documents)
    battery = tracking.battery_documents(documents)
    assert state.digest == tracking.state_digest(
        state.cfg, state.metrics, state.tags, None, battery
    )
    seen = {state.digest}
    for stage in EXPERIMENTS:
        state.experiments[stage] = {"stage": stage, "value": 2}
        assert state.digest not in seen, stage
        seen.add(state.digest)
