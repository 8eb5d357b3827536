"""A plain-language reading of the lesson's numbers, generated from them.

Each sentence picks its words by a named threshold and always prints the number.
"""

from __future__ import annotations

from pipeline.analysis.golden import golden_mismatches
from pipeline.analysis.registry import ATTENTION, RANDOM, SCORES, competitors

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


# --- the seed study ---

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


def study_reading(summary: dict, table) -> str:
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


# --- the faithfulness battery ---


def best_explainers(run: dict, metric: str, higher: bool) -> list[str]:
    values = {name: run[name][metric] for name in competitors(list(run), metric)}
    best = max(values.values()) if higher else min(values.values())
    return [name for name, value in values.items() if value == best]


def pair_key(first: str, second: str) -> str:
    return f"{first} vs {second}"  # pipeline/analysis/paired.py's


def paired_entry(pairs: dict, first: str, second: str) -> dict:
    """first against second, whichever order the pair is stored in: the difference
    first - second, its interval, and the shares of seeds each is better on."""
    if pair_key(first, second) in pairs:
        return pairs[pair_key(first, second)]
    entry = pairs[pair_key(second, first)]
    return {
        "difference": -entry["difference"],
        "ci95_low": -entry["ci95_high"],
        "ci95_high": -entry["ci95_low"],
        "share_first_better": entry["share_second_better"],
        "share_second_better": entry["share_first_better"],
    }


def covers_zero(entry: dict) -> bool:
    """The interval holds 0 (its ends are written at 8 decimals, so float noise is 0)."""
    return entry["ci95_low"] <= 0.0 <= entry["ci95_high"]


def paired_clause(first: str, second: str, entry: dict, higher: bool) -> str:
    """ "X beats Y by d [interval]", or "no difference", with the shares of seeds."""
    shares = (
        f"{first} better on {percent(entry['share_first_better'])} of seeds, {second} on "
        f"{percent(entry['share_second_better'])}"
    )
    interval = f"[{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}]"
    if covers_zero(entry):
        return (
            f"{first} and {second} show no difference ({entry['difference']:+.4f}, "
            f"interval {interval} covers 0; {shares})"
        )
    ahead = (entry["difference"] > 0) == higher
    winner, loser = (first, second) if ahead else (second, first)
    return (
        f"{winner} beats {loser} by {abs(entry['difference']):.4f} ({first} - {second} "
        f"{interval}; {shares})"
    )


def by_mean(study: dict, metric: str, higher: bool) -> list[str]:
    """The metric's competitors, best mean first (ties in the registry's order)."""
    rows = competitors(list(study), metric)
    sign = -1.0 if higher else 1.0
    return sorted(rows, key=lambda row: sign * study[row][metric]["mean"])


def paired_reading(summary: dict, higher: dict[str, bool]) -> list[str]:
    """Per metric, the best explainer by mean against the runner-up, as a paired
    difference with its interval; then where a majority of seeds and the mean
    disagree about attention."""
    study, paired = summary["explainers"], summary["paired"]
    lines = [
        f"Over the {summary['seeds']} study runs, paired on the same seeds and held-out "
        "sequences (the difference of the means, a 95% multi-bootstrap interval resampling "
        "seeds and sequences together, and the share of seeds on which each is better), "
        "the best explainer by mean against the next:"
    ]
    for metric in paired:
        best, runner_up = by_mean(study, metric, higher[metric])[:2]
        entry = paired_entry(paired[metric], best, runner_up)
        lines.append(f"- `{metric}`: {paired_clause(best, runner_up, entry, higher[metric])}.")
    split = []
    for metric, pairs in paired.items():
        rivals = []
        for rival in competitors(list(study), metric):
            entry = pairs.get(pair_key(ATTENTION, rival))
            if entry is None or covers_zero(entry):
                continue
            mean_ahead = (entry["difference"] > 0) == higher[metric]
            seeds_ahead = entry["share_first_better"] > entry["share_second_better"]
            if mean_ahead != seeds_ahead:
                rivals.append(
                    f"{rival} ({percent(entry['share_first_better'])} against "
                    f"{percent(entry['share_second_better'])}, mean favouring "
                    f"{ATTENTION if mean_ahead else rival} by {abs(entry['difference']):.4f})"
                )
        if rivals:
            split.append(f"on `{metric}` against " + ", ".join(rivals))
    if split:
        lines += [
            "",
            "Where most seeds and the mean disagree about attention (the share of seeds on "
            "which attention is better against the share on which it is worse): "
            + "; ".join(split)
            + ". A few seeds on which one explainer fails badly outweigh many on which it "
            "is slightly ahead: which one 'wins' depends on whether one asks about a typical "
            "seed or the average.",
        ]
    return lines


def faithfulness_reading(document: dict, summary: dict, higher: dict[str, bool]) -> str:
    """What each metric measures, which explainer each one puts first, where they
    disagree; no winner is crowned."""
    lines = [
        "Each metric answers a different question (loo, the reference of tau_loo, does not "
        "compete on it; the random order is a baseline, not a competitor):"
    ]
    lines += [f"- `{key}`: {score.measures}." for key, score in SCORES.items()]
    lines.append("")
    for seed, run in document["runs"].items():
        firsts = {m: best_explainers(run, m, higher[m]) for m in SCORES}
        named = "; ".join(
            f"{m} puts {' and '.join(firsts[m])} first ({run[firsts[m][0]][m]:.4f})"
            for m in ("tau_loo", "aopc_comprehensiveness", "hit_at_1")
        )
        distinct = {name for m in SCORES for name in firsts[m]}
        verdict = (
            "the metrics agree on one explainer"
            if len(distinct) == 1
            else f"the seven metrics put {len(distinct)} different explainers first"
        )
        lines.append(f"- **Run {seed}**: {named}: {verdict}.")
    runs = document["runs"]
    if len(runs) >= 2:
        (seed_a, a), (seed_b, b) = list(runs.items())[:2]
        tau = (a["attention"]["tau_loo"], b["attention"]["tau_loo"])
        hit = (a["attention"]["hit_at_1"], b["attention"]["hit_at_1"])
        if (tau[0] - tau[1]) * (hit[0] - hit[1]) < 0:
            lines += [
                "",
                f"Attention's tau_loo is {tau[0]:.4f} on run {seed_a} and {tau[1]:.4f} on run "
                f"{seed_b}, while its hit@1 is {hit[0]:.4f} and {hit[1]:.4f}: the two disagree "
                "on which run's weights explain it. tau over all steps rewards weights that "
                "order the unimportant steps as removal does; hit@1 rewards weights that find "
                "the marked step. Neither is the faithfulness of attention.",
            ]
    lines += ["", *paired_reading(summary, higher)]
    study = summary["explainers"]
    lines += [
        "",
        f"A random order needs {study['random']['flips_to_decision']['mean']:.2f} removals to "
        f"flip the decision on average; attention needs "
        f"{study['attention']['flips_to_decision']['mean']:.2f}, leave-one-out "
        f"{study['loo']['flips_to_decision']['mean']:.2f}.",
    ]
    return "\n".join(lines)


# --- the randomisation sanity checks ---

UNCHANGED = 1.0 - 1e-12  # a Spearman at 1 up to its 8 written decimals: the same ranking


def spearman_clause(entry: dict) -> str:
    return f"{entry['mean']:.4f} [{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}]"


def sanity_reading(sanity: dict) -> list[str]:
    """Which explainers pass the randomisation checks (their similarity after the whole
    cascade falls to chance: its interval covers 0) and which fail, each with the
    steps that leave its scores unchanged and its similarity under permuted labels
    (pipeline/analysis/sanity.py's summary)."""
    tests = sanity["tests"]
    cascade, independent = tests["cascading"], tests["independent"]
    labels = next(iter(tests["labels"].values()))
    steps = list(cascade)
    every = cascade[steps[-1]]

    def spearman(step: dict, row: str) -> dict:
        return step[row]["spearman"]

    rows = sorted(
        (row for row in every if row != RANDOM), key=lambda row: spearman(every, row)["mean"]
    )
    lines = [
        f"Sanity checks (Adebayo et al. 2018) on the first {sanity['seeds']} study runs: the "
        "Spearman correlation of each explainer's step scores with its scores for the same "
        "run with parameters re-drawn from their init, from the output side inwards "
        f"({', '.join(steps)}), mean [95% multi-bootstrap interval]; 1 is an unchanged "
        "ranking, 0 chance. An explainer passes when it falls to chance once every group is "
        "re-drawn (its interval covers 0):",
    ]
    for row in rows:
        entry = spearman(every, row)
        verdict = "passes" if covers_zero(entry) else "fails"
        unchanged = [step for step in steps if spearman(cascade[step], row)["mean"] >= UNCHANGED]
        kept = (
            f"; unchanged (exactly 1) while {' and '.join(unchanged)} are re-drawn"
            if unchanged
            else ""
        )
        weakest = min(independent, key=lambda step: spearman(independent[step], row)["mean"])
        spread = f"runs' 5% to 95%: {entry['q05']:.4f} to {entry['q95']:.4f}"
        lines.append(
            f"- `{row}` {verdict}: {spearman_clause(entry)} with everything re-drawn "
            f"({spread}){kept}; "
            f"alone, re-drawing {weakest} moves it most "
            f"({spearman(independent[weakest], row)['mean']:.4f}); trained on permuted "
            f"labels, {spearman(labels, row)['mean']:.4f}."
        )
    lines.append(
        f"- The random baseline sits at {spearman_clause(spearman(every, RANDOM))}, chance. "
        f"The models trained on permuted labels reach {sanity['label_heldout_accuracy']:.4f} "
        "held-out accuracy on the true labels, against "
        f"{sanity['heldout_majority_share']:.4f} for always answering the majority class."
    )
    return lines
