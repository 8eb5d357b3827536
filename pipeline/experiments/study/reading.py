"""A plain-language reading of the seed study, generated from its summary.

Each sentence picks its words by a named threshold and always prints the number.
"""

from __future__ import annotations

import pandas as pd

from pipeline.reporting.reading import percent

RARE = 0.05  # share of seed pairs: a gap this rare is unusual
COMMON = 0.25
UNLUCKY = 0.1  # share of study seeds strictly below a lesson seed
LUCKY = 0.9
FINDS_STEP = 0.9  # argmax hit that counts as "the top weight finds the marked step"


def rank_clause(seed: str, entry: dict) -> str:
    share = entry["percentile"]
    verdict = (
        "an unlucky seed"
        if share < UNLUCKY
        else "a lucky seed"
        if share >= LUCKY
        else "neither lucky nor unlucky"
    )
    return (
        f"run {seed} (held-out {entry['heldout_accuracy']:.4f}) beats {percent(share)} of the "
        f"study's seeds: {verdict}"
    )


def study_reading(summary: dict, table: pd.DataFrame) -> str:
    """What the seed study says, each number named by what it measures."""
    count, heldout, gap = summary["seeds"], summary["heldout_accuracy"], summary["pair_gap"]
    pairs = count * (count - 1) // 2
    share = gap["p_at_least_observed"]
    how_rare = "rare" if share < RARE else "common" if share >= COMMON else "uncommon"
    lesson = summary["lesson_seeds"]
    ranks = "; ".join(rank_clause(seed, entry) for seed, entry in lesson.items())
    mass_share = summary["share_marker_mass_above_half"]
    hit, agreement = summary["argmax_hit"], summary["weight_effect_agreement"]
    peaked_only = table[(table["argmax_hit"] >= FINDS_STEP) & (table["marker_mass"] <= 0.5)]
    sentences = [
        f"Over {count} init seeds on the same data, held-out accuracy has mean "
        f"{heldout['mean']:.4f} (95% multi-bootstrap interval {heldout['ci95_low']:.4f} to "
        f"{heldout['ci95_high']:.4f}, resampling seeds and held-out sequences together) and "
        f"median {heldout['median']:.4f}; the middle 90% of seeds lie between "
        f"{heldout['q05']:.4f} and {heldout['q95']:.4f}, the worst at {heldout['min']:.4f}.",
        f"Two seeds differ by {gap['mean']:.4f} in held-out accuracy on average, and "
        f"{percent(share)} of the {pairs} pairs of seeds differ by at least the lesson's gap "
        f"{gap['observed']:.4f}: a gap that large is {how_rare}.",
        f"Ranked among the study's seeds (the share with strictly lower held-out accuracy; ties "
        f"are not counted, so a seed at the ceiling ranks below 100%): {ranks}.",
        f"{percent(mass_share)} of the seeds put more than half of their held-out weight on the "
        f"marked step (marker mass above 0.5), while the top weight sits on the marked step in "
        f"{percent(hit['mean'])} of held-out sequences on average (argmax hit; median "
        f"{hit['median']:.4f}, 5% of seeds at most {hit['q05']:.4f}).",
    ]
    if len(peaked_only):
        sentences.append(
            f"The two measures disagree on {len(peaked_only)} seeds "
            f"({percent(len(peaked_only) / count)}): their top weight finds the marked step in "
            f"at least {percent(FINDS_STEP)} of sequences, yet less than half of the weight "
            "lands there, so whether these runs 'find the step' depends on the measure."
        )
    sentences.append(
        f"The most-weighted step is also the one whose removal moves P(y=1) most in "
        f"{percent(agreement['mean'])} of sequences on average (weight-effect agreement), but "
        f"in the worst 5% of seeds in at most {percent(agreement['q05'])}: attention weights "
        "explain some seeds and not others."
    )
    return " ".join(sentences)
