"""A plain-language reading of the lesson's numbers, generated from them.

Each sentence picks its words by a named threshold and always prints the number.
"""

from __future__ import annotations

from pipeline.analysis.golden import golden_mismatches

# Thresholds of the plain-language reading. Rough on purpose: they pick a word,
# the sentence always prints the number next to it.
POINTS_AT_MARKER = 0.9  # argmax hit: the top weight is on the marked step almost always
LEANS_TOWARDS = 2.0  # marker mass at least twice the uniform weight
AGREES = 0.9  # agreement: weight ranking matches ablation ranking almost always
PARTLY_AGREES = 0.5
LARGE_GAP = 0.05  # gap as a share of mean held-out accuracy
NOTICEABLE_GAP = 0.01


def percent(share: float) -> str:
    return f"{share:.0%}"


def baseline_clause(run: dict, baseline: float) -> str:
    accuracy = run["heldout_accuracy"]
    if accuracy > baseline:
        verdict = f"beats the majority-class baseline {baseline:.4f} by {accuracy - baseline:.4f}"
    else:
        verdict = f"does not beat the majority-class baseline {baseline:.4f}"
    return f"held-out accuracy {accuracy:.4f} {verdict}"


def pointing_clause(run: dict, uniform: float) -> str:
    mass, hit = run["marker_mass"], run["argmax_hit"]
    numbers = (
        f"marker mass {mass:.4f} is {mass / uniform:.1f}x the uniform weight {uniform:.4f} "
        f"and the largest weight sits on the marked step in {percent(hit)} of held-out sequences"
    )
    leans = mass >= LEANS_TOWARDS * uniform
    if hit >= POINTS_AT_MARKER and leans:
        return f"its weights point at the marked step: {numbers}"
    if hit >= POINTS_AT_MARKER:
        return f"its weights are nearly flat, though their peak is the marked step: {numbers}"
    if leans:
        return f"its weights lean towards the marked step but often look elsewhere: {numbers}"
    return f"its weights do not point at the marked step: {numbers}"


def agreement_sentence(run: dict) -> str:
    share = run["weight_effect_agreement"]
    if share >= AGREES:
        verdict = "The weights agree with the ablation"
    elif share >= PARTLY_AGREES:
        verdict = "The weights only partly agree with the ablation"
    else:
        verdict = "The weights do not agree with the ablation"
    return (
        f"{verdict}: the most-weighted step is the one whose removal moves P(y=1) most "
        f"in {percent(share)} of held-out sequences."
    )


def high_weight_sentence(run: dict, high: float, low: float) -> str:
    count, weak = run["high_weight"], run["high_weight_low_effect"]
    if count == 0:
        return f"No held-out sequence puts more than {high:g} of its weight on one step."
    if weak == 0:
        return (
            f"All {count} sequences with a weight above {high:g} on one step lose at least "
            f"{low:g} of P(y=1) without that step: there, high weight meant importance."
        )
    return (
        f"{weak} of the {count} sequences ({percent(weak / count)}) with a weight above "
        f"{high:g} on one step change P(y=1) by less than {low:g} without that step: "
        "a high weight is not proof of importance."
    )


def run_reading(seed: str, run: dict, data: dict, high: float, low: float) -> str:
    """One bullet per run: accuracy, where the weights point, whether they explain."""
    return (
        f"- **Run {seed}**: {baseline_clause(run, data['baseline'])}; "
        f"{pointing_clause(run, data['uniform_weight'])}. "
        f"{agreement_sentence(run)} {high_weight_sentence(run, high, low)}"
    )


def data_sentence(data: dict) -> str:
    at_marker = data["max_reading_at_marker"]
    if at_marker < 0.5:
        consequence = (
            "the size of a reading does not give the marked step away: "
            "the model has to use the marker channel"
        )
    else:
        consequence = (
            "the largest reading often gives the marked step away: "
            "a model can score without the marker"
        )
    return (
        f"{percent(data['any_step_above_threshold'])} of all sequences have some candidate step "
        f"above the threshold, and the marked step holds the largest reading in "
        f"{percent(at_marker)} of held-out sequences, so {consequence}. "
        f"Always predicting the majority class scores {data['baseline']:.4f} on held-out data."
    )


def gap_sentence(document: dict) -> str:
    if len(document["runs"]) == 1:
        return "With one seed there is no run-to-run gap; add seeds to train.seeds to see one."
    gap, mean = document["seed_gap"], document["heldout_accuracy_mean"]
    share = gap / mean if mean > 0 else 0.0  # every run at 0 accuracy: no spread
    size = "large" if share >= LARGE_GAP else "noticeable" if share >= NOTICEABLE_GAP else "small"
    joint = "and" if size == "small" else "yet"
    return (
        f"The runs differ only in their init seed, {joint} held-out accuracy spans {gap:.4f} "
        f"(mean {mean:.4f}, std {document['heldout_accuracy_std']:.4f}): {percent(share)} "
        f"of the mean accuracy, a {size} run-to-run gap."
    )


def contrast_sentence(document: dict) -> str:
    """Across runs: do all seeds' weights tell the same story?"""
    runs = document["runs"].values()
    agreeing = sum(run["weight_effect_agreement"] >= AGREES for run in runs)
    count = len(document["runs"])
    if count == 1:
        return ""
    if agreeing == count:
        return f"The runs tell one story: the weights agree with the ablation in all {count} runs."
    if agreeing == 0:
        return (
            f"The runs tell one story: in no run of {count} do the weights agree with the ablation."
        )
    return (
        f"The runs tell different stories: the weights agree with the ablation in {agreeing} "
        f"of {count} runs, so whether attention explains the model depends on the seed."
    )


def golden_sentence(document: dict) -> str:
    missing = golden_mismatches(document)
    if not missing:
        return "Every number matches the lesson's at 4 decimals."
    count = "1 number differs" if len(missing) == 1 else f"{len(missing)} numbers differ"
    return f"{count} from the lesson's: {'; '.join(missing)}."


def reading(document: dict, golden: bool, high: float, low: float) -> str:
    data = document["data"]
    bullets = [run_reading(seed, run, data, high, low) for seed, run in document["runs"].items()]
    closing = [gap_sentence(document), contrast_sentence(document)]
    if golden:
        closing.append(golden_sentence(document))
    return "\n".join([data_sentence(data), "", *bullets, "", " ".join(filter(None, closing))])
