"""The README's numbers are the committed outputs': its `dvc repro` block is what the
track stage prints on them, and every number of its answer is one the outputs hold
(or carries the setting that made it)."""

from __future__ import annotations

import json
import re

from pipeline import tracking
from pipeline.config import PROJECT_ROOT, load_params
from pipeline.config.results import experiment_results
from pipeline.reporting import answer
from pipeline.stages.track import ui_hint

README = (PROJECT_ROOT / "README.md").read_text()
REPORTS = PROJECT_ROOT / "reports"


def section(title: str) -> str:
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def value(path: str):
    """`file:key.key...` of a committed numbers file."""
    name, keys = path.split(":")
    found = json.loads((REPORTS / name).read_text())
    for key in keys.split("."):
        found = found[int(key)] if isinstance(found, list) else found[key]
    return found


# Each number of the README's answer, as the README writes it, and where it comes
# from in the committed outputs.
CLAIMS = [
    ("Run 1 is accurate ({:.4f} held-out)", ["metrics.json:runs.1.heldout_accuracy"]),
    ("scattered (marker mass {:.2f})", ["metrics.json:runs.1.marker_mass"]),
    (
        "run 2 ({:.4f}) puts {:.2f} of its weight",
        ["metrics.json:runs.2.heldout_accuracy", "metrics.json:runs.2.marker_mass"],
    ),
    (
        "happens {} times in run 1 and {} times in run 2",
        [
            "metrics.json:runs.1.high_weight_low_effect",
            "metrics.json:runs.2.high_weight_low_effect",
        ],
    ),
    (
        "held-out accuracy has mean {:.4f} (95% interval [{:.4f}, {:.4f}])",
        [
            "study/summary.json:heldout_accuracy.mean",
            "study/summary.json:heldout_accuracy.ci95_low",
            "study/summary.json:heldout_accuracy.ci95_high",
        ],
    ),
    (
        "{:.1%} of seed pairs are at least {:.4f} apart",
        ["study/summary.json:pair_gap.p_at_least_observed", "metrics.json:seed_gap"],
    ),
    ("(it beats {:.1%} of the seeds)", ["study/summary.json:lesson_seeds.1.percentile"]),
    (
        "training, {:.1%} settle their top weight on the marked step (median epoch {:g}), and "
        "{} of the {} whose accuracy also settles find the step first",
        [
            "dynamics/dynamics.json:predictors.share_found",
            "dynamics/dynamics.json:emergence.median",
            "dynamics/dynamics.json:emergence.order.rationale_first",
            "dynamics/dynamics.json:emergence.order.seeds",
        ],
    ),
    (
        "The seeds spread {:.2f} times as much as test-set noise predicts, and a flipped last "
        "bit changes the story of {} of {} seeds",
        [
            "dynamics/dynamics.json:noise.ratio",
            "dynamics/dynamics.json:flip.stories_changed",
            "dynamics/dynamics.json:flip.seeds",
        ],
    ),
    (
        "That run 1 is unlucky takes {} seeds to show 95% of the time",
        ["dynamics/dynamics.json:claims.run 1 is an unlucky seed.k"],
    ),
    (
        "is {:.2f} on run 1 and {:.2f} on run 2",
        [
            "faithfulness.json:runs.1.attention.tau_loo",
            "faithfulness.json:runs.2.attention.tau_loo",
        ],
    ),
    (
        "on the marked step is {:.2f} and {:.2f}",
        [
            "faithfulness.json:runs.1.attention.hit_at_1",
            "faithfulness.json:runs.2.attention.hit_at_1",
        ],
    ),
    (
        "value_norm still rank the steps as before ({:.2f} to {:.2f})",
        [  # the lowest and the highest of the three with every parameter re-drawn
            "study/faithfulness.json:sanity.tests.cascading.keys.grad_x_input.spearman.mean",
            "study/faithfulness.json:sanity.tests.cascading.keys.integrated_gradients.spearman.mean",
        ],
    ),
    ("(a hand-set head scores {:.4f})", ["grid/two_patterns-lesson.json:hand_set_accuracy"]),
    (
        "single heads reach {:.2f} held-out and two heads {:.2f} over the committed "
        "grid's {} seeds",
        [
            "grid/two_patterns-lesson.json:heldout_accuracy.mean",
            "grid/two_patterns-multihead2.json:heldout_accuracy.mean",
            "grid/two_patterns-lesson.json:seeds",
        ],
    ),
    (
        "On the lesson's model ({} seeds), the exact adversary finds weights at a median "
        "JSD of {:.4f} from the learned ones",
        [
            "debate/lesson-lesson.json:seeds",
            "debate/lesson-lesson.json:adversary.0.median_max_jsd.median",
        ],
    ),
    ("where two seeds differ by {:.4f}", ["debate/lesson-lesson.json:seed_variance.jsd.median"]),
    (
        "those weights keep {:.4f} held-out accuracy (uniform weights: {:.4f})",
        [
            "debate/lesson-lesson.json:fixed_attention.frozen.mean",
            "debate/lesson-lesson.json:fixed_attention.uniform.mean",
        ],
    ),
    (
        "(lam {:g}) takes accuracy down to {:.4f}",
        [
            "debate/lesson-lesson.json:deception.2.penalty",
            "debate/lesson-lesson.json:deception.2.heldout_accuracy.mean",
        ],
    ),
    (
        "step flips {:.4f} of the decisions, a random other step {:.4f}",
        [
            "erasure/metrics.json:study.erasure.attention.top_flip.mean",
            "erasure/metrics.json:study.erasure.attention.other_flip.mean",
        ],
    ),
    ("fall to the majority class, {:.4f})", ["roar/metrics.json:majority_share"]),
    (
        "with the marked reading (IIA {:.4f})",
        ["abstraction/abstraction.json:conditions.trained.linear.iia.mean"],
    ),
    (
        "lifts untrained runs from {:.4f} to {:.4f}",
        [
            "abstraction/abstraction.json:conditions.random.linear.iia.mean",
            "abstraction/abstraction.json:conditions.random.nonlinear.iia.mean",
        ],
    ),
]


def test_the_repro_block_is_what_the_track_stage_prints():
    block = section("What `dvc repro` prints").split("```\n", 2)[1].split("```", 1)[0]
    cfg = load_params()
    metrics = json.loads((REPORTS / "metrics.json").read_text())
    results = experiment_results(cfg, "tracked")
    printed = answer.answer(cfg, metrics, results, ui_hint(cfg, tracking.store_uri(cfg.tracking)))
    assert block.strip("\n") == printed.strip("\n")


def test_every_number_of_the_answer_is_the_committed_outputs():
    """Each claim, written from the committed numbers, is in the README's answer; the
    answer has no other decimal (the 1000-seed figures name their setting)."""
    text = " ".join(section("The answer").split())
    for claim, paths in CLAIMS:
        written = claim.format(*(value(path) for path in paths))
        assert written in text, written
    claimed = " ".join(claim for claim, _ in CLAIMS)
    text = re.sub(r"\([^()]*grid\.seeds=1000[^()]*\)", "", text)  # another setting's
    decimals = re.findall(r"(?<![\w.])\d+\.\d+%?", text)
    count = claimed.count("{:.")
    settings = {"0.5", "0.05"}  # eval.high_weight and eval.low_effect
    assert len([d for d in decimals if d not in settings]) == count, decimals
