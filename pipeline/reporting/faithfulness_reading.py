"""A plain-language reading of the faithfulness battery: what each score measures,
which explainer each puts first, and the paired comparisons over the study's runs.

A paired amount is always shown as an advantage in the score's better direction
(the glossary says once which direction that is), so an amount and its interval
share their sign: "attention beats grad_x_input by 0.4499 [0.0555, 0.8555]" on a
score where lower is better, never "by 0.4499" beside [-0.8555, -0.0555].
"""

from __future__ import annotations

import pandas as pd

from pipeline.core.measures import ATTENTION, RANDOM, SCORES, competitors
from pipeline.reporting import tables
from pipeline.reporting.reading import percent


def best_explainers(run: dict, metric: str, higher: bool) -> list[str]:
    values = {name: run[name][metric] for name in competitors(list(run), metric)}
    best = max(values.values()) if higher else min(values.values())
    return [name for name, value in values.items() if value == best]


def pair_key(first: str, second: str) -> str:
    return f"{first} vs {second}"  # pipeline/analysis/paired.py's


def swapped(entry: dict) -> dict:
    """A paired entry of (first, second) as the entry of (second, first)."""
    return {
        "difference": -entry["difference"],
        "ci95_low": -entry["ci95_high"],
        "ci95_high": -entry["ci95_low"],
        "share_first_better": entry["share_second_better"],
        "share_second_better": entry["share_first_better"],
    }


def paired_entry(pairs: dict, first: str, second: str) -> dict:
    """first against second, whichever order the pair is stored in: the difference
    first - second, its interval, and the shares of seeds each is better on."""
    if pair_key(first, second) in pairs:
        return pairs[pair_key(first, second)]
    return swapped(pairs[pair_key(second, first)])


def covers_zero(entry: dict) -> bool:
    """The interval holds 0 (its ends are written at 8 decimals, so float noise is 0)."""
    return entry["ci95_low"] <= 0.0 <= entry["ci95_high"]


def advantage(entry: dict, higher: bool) -> dict:
    """The entry's difference and interval as first's advantage in the better
    direction: first - second where higher is better, second - first where lower is;
    positive means first is better."""
    if higher:
        return entry
    flipped = swapped(entry)
    return {**entry, **{key: flipped[key] for key in ("difference", "ci95_low", "ci95_high")}}


def amount(entry: dict, signed: bool = False) -> str:
    """`difference [low, high]` at 4 decimals."""
    difference = f"{entry['difference']:+.4f}" if signed else f"{entry['difference']:.4f}"
    return f"{difference} [{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}]"


def paired_clause(first: str, second: str, entry: dict, higher: bool) -> str:
    """ "X beats Y by d [interval]", or "no difference", with the shares of seeds;
    `entry` is first against second."""
    ahead = advantage(entry, higher)
    if covers_zero(entry):
        return (
            f"{first} and {second} show no difference ({first} ahead by "
            f"{amount(ahead, signed=True)}, an interval that covers 0; "
            f"{shares_clause(first, second, entry)})"
        )
    if ahead["difference"] < 0:
        first, second, ahead = second, first, swapped(ahead)
    return f"{first} beats {second} by {amount(ahead)} ({shares_clause(first, second, ahead)})"


def shares_clause(first: str, second: str, entry: dict) -> str:
    return (
        f"{first} better on {percent(entry['share_first_better'])} of seeds, {second} on "
        f"{percent(entry['share_second_better'])}"
    )


def by_mean(study: dict, metric: str, higher: bool) -> list[str]:
    """The metric's competitors, best mean first (ties in the registry's order)."""
    rows = competitors(list(study), metric)
    sign = -1.0 if higher else 1.0
    return sorted(rows, key=lambda row: sign * study[row][metric]["mean"])


def direction(higher: bool) -> str:
    return "higher" if higher else "lower"


def best_against_next(summary: dict, higher: dict[str, bool]) -> pd.DataFrame:
    """Per score, the best explainer by mean against the runner-up: the best one's
    advantage [95% interval] and the shares of seeds on which each is better."""
    study, paired = summary["explainers"], summary["paired"]
    rows = {}
    for metric in paired:
        best, runner_up = by_mean(study, metric, higher[metric])[:2]
        entry = paired_entry(paired[metric], best, runner_up)
        ahead = advantage(entry, higher[metric])
        rows[SCORES[metric].label] = {
            "better": direction(higher[metric]),
            "best by mean": best,
            "next": runner_up,
            "best ahead by [95% interval]": amount(ahead, signed=True)
            + (" (no difference)" if covers_zero(entry) else ""),
            "seeds: best / next better": f"{percent(entry['share_first_better'])} / "
            f"{percent(entry['share_second_better'])}",
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def seeds_against_mean(summary: dict, higher: dict[str, bool]) -> pd.DataFrame:
    """The pairs with attention where most seeds favour one explainer and the mean
    (its interval clear of 0) the other, one row each."""
    study, rows = summary["explainers"], []
    for metric, pairs in summary["paired"].items():
        for rival in competitors(list(study), metric):
            entry = pairs.get(pair_key(ATTENTION, rival))
            if entry is None or covers_zero(entry):
                continue
            ahead = advantage(entry, higher[metric])
            mean_ahead = ahead["difference"] > 0
            if mean_ahead == (entry["share_first_better"] > entry["share_second_better"]):
                continue
            favoured = ahead if mean_ahead else swapped(ahead)
            rows.append(
                {
                    "score": SCORES[metric].label,
                    f"{ATTENTION} against": rival,
                    f"seeds: {ATTENTION} better": percent(entry["share_first_better"]),
                    "seeds: it is better": percent(entry["share_second_better"]),
                    "mean favours": ATTENTION if mean_ahead else rival,
                    "by [95% interval]": amount(favoured),
                }
            )
    return pd.DataFrame(rows)


def table(frame: pd.DataFrame, index: bool = True) -> str:
    return tables.markdown(frame, index=index, stralign="right", disable_numparse=True)


def paired_reading(summary: dict, higher: dict[str, bool]) -> list[str]:
    """Per score, the best explainer by mean against the runner-up; then where a
    majority of seeds and the mean disagree about attention. Paragraphs and tables."""
    parts = [
        f"Over the {summary['seeds']} study runs, paired on the same seeds and held-out "
        "sequences, the best explainer by mean against the next: how far ahead it is in "
        "the score's better direction (the difference of the means, with a 95% "
        "multi-bootstrap interval resampling seeds and sequences together; an interval "
        "that covers 0 is no difference), and the shares of seeds on which each is better:",
        table(best_against_next(summary, higher)),
    ]
    split = seeds_against_mean(summary, higher)
    if len(split):
        parts += [
            f"Where most seeds and the mean disagree about attention ({len(split)} pairs): "
            "a few seeds on which one explainer fails badly outweigh many on which it is "
            "slightly ahead, so which one 'wins' depends on whether one asks about a "
            "typical seed or the average. The rest of the seeds tie.",
            table(split, index=False),
        ]
    return parts


def firsts_line(seed: str, run: dict, higher: dict[str, bool]) -> str:
    """Which explainer three of the scores put first on one run, and how many the
    seven put first in all."""
    firsts = {m: best_explainers(run, m, higher[m]) for m in SCORES}
    named = "; ".join(
        f"{SCORES[m].label} puts {' and '.join(firsts[m])} first ({run[firsts[m][0]][m]:.4f})"
        for m in ("tau_loo", "aopc_comprehensiveness", "hit_at_1")
    )
    distinct = {name for m in SCORES for name in firsts[m]}
    verdict = (
        "the scores agree on one explainer"
        if len(distinct) == 1
        else f"the {len(SCORES)} scores put {len(distinct)} different explainers first"
    )
    return f"- **Run {seed}**: {named}: {verdict}."


def tau_against_hit(runs: dict) -> list[str]:
    """Where attention's tau_loo and hit@1 rank the first two runs oppositely."""
    if len(runs) < 2:
        return []
    (seed_a, a), (seed_b, b) = list(runs.items())[:2]
    tau = (a[ATTENTION]["tau_loo"], b[ATTENTION]["tau_loo"])
    hit = (a[ATTENTION]["hit_at_1"], b[ATTENTION]["hit_at_1"])
    if (tau[0] - tau[1]) * (hit[0] - hit[1]) >= 0:
        return []
    return [
        f"Attention's tau_loo is {tau[0]:.4f} on run {seed_a} and {tau[1]:.4f} on run "
        f"{seed_b}, while its hit@1 is {hit[0]:.4f} and {hit[1]:.4f}: the two disagree "
        "on which run's weights explain it. tau over all steps rewards weights that "
        "order the unimportant steps as removal does; hit@1 rewards weights that find "
        "the marked step. Neither is the faithfulness of attention."
    ]


def faithfulness_reading(document: dict, summary: dict, higher: dict[str, bool]) -> list[str]:
    """What each score measures, which explainer each one puts first, where they
    disagree; no winner is crowned. Paragraphs and tables, in order."""
    glossary = [
        "Each score answers a different question, and says which way is better "
        "(loo, the reference of tau_loo, does not compete on it; the random order is a "
        "baseline, not a competitor):",
        *(f"- **{score.label}** (`{key}`): {score.measures}." for key, score in SCORES.items()),
    ]
    runs = document["runs"]
    study = summary["explainers"]
    return [
        "\n".join(glossary),
        "\n".join(firsts_line(seed, run, higher) for seed, run in runs.items()),
        *tau_against_hit(runs),
        *paired_reading(summary, higher),
        f"A random order needs {study[RANDOM]['flips_to_decision']['mean']:.2f} removals to "
        f"flip the decision on average; attention needs "
        f"{study[ATTENTION]['flips_to_decision']['mean']:.2f}, leave-one-out "
        f"{study['loo']['flips_to_decision']['mean']:.2f}.",
    ]
