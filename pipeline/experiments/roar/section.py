"""The section "Remove and retrain" of report.md, from reports/roar/metrics.json
(pipeline/experiments/roar/retrain.py): a table per ranking model and a reading generated from the
numbers, against the known answer (removing the marked step alone destroys the task)."""

from __future__ import annotations

import pandas as pd

from pipeline.reporting import tables

MODEL_FREE = (
    "model_free"  # pipeline/experiments/roar/retrain.py's key for the rankings that read no model
)
RATIONALE, RANDOM, SMOOTHED = "rationale", "random", "_smoothed"


def interval(numbers: dict) -> str:
    return f"{numbers['mean']:.4f} [{numbers['ci95_low']:.4f}, {numbers['ci95_high']:.4f}]"


def ranking_table(document: dict, ranking: str) -> pd.DataFrame:
    """One row per ranking of `ranking`'s table (and the model-free ones), one column per
    fraction: the accuracy drop with its 95% interval, and the share of held-out
    sequences whose marked step was removed."""
    rows = {**document["rankings"][ranking], **document["rankings"][MODEL_FREE]}
    steps = document["removed_steps"]
    return pd.DataFrame(
        {
            f"k={k} ({steps[k]} step{'s' if steps[k] != 1 else ''})": {
                row: f"{interval(cells[k]['accuracy_drop'])} ({cells[k]['marked_removed']:.2f})"
                for row, cells in rows.items()
            }
            for k in steps
        }
    )


def owner(ranking: str) -> str:
    return "without a model" if ranking == MODEL_FREE else f"run {ranking}"


def listed(names: list[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    return ", ".join(quoted[:-1]) + f" and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def first_to_chance(document: dict, ranking: str) -> str:
    """Which of a ranking model's rows reach chance first, and at which fraction."""
    reached = {row: k for row, k in document["at_chance_from"][ranking].items() if k is not None}
    if not reached:
        return f"{owner(ranking)}: none"
    first = min(reached.values())
    rows = [row for row, k in reached.items() if k == first]
    never = [row for row in document["at_chance_from"][ranking] if row not in reached]
    line = f"{owner(ranking)}: {listed(rows)} at k={first:g}"
    later = sorted({k for k in reached.values() if k != first})
    for k in later:
        line += f"; {listed([r for r, v in reached.items() if v == k])} at k={k:g}"
    return line + (f"; {listed(never)} never" if never else "")


def known_answer(document: dict) -> str:
    """The rationale ranking's smallest fraction: the test's known answer."""
    k = next(iter(document["removed_steps"]))
    cells = document["rankings"][MODEL_FREE][RATIONALE][k]
    at_chance = cells["above_chance"]["ci95_low"] <= 0
    unmodified = document["unmodified"]["heldout_accuracy"]["mean"]
    verdict = (
        "agrees with the known answer: removing the marked step alone destroys the task"
        if at_chance and cells["marked_removed"] == 1.0
        else "does not reach chance: the known answer is that it should"
    )
    return (
        f"The known answer: the `rationale` ranking at k={k} removes "
        f"{document['removed_steps'][k]} step, the marked one, in "
        f"{cells['marked_removed']:.0%} of the held-out sequences, and the retrained runs "
        f"fall from {unmodified:.4f} to {cells['heldout_accuracy']:.4f} held-out accuracy "
        f"(the majority class is {document['majority_share']:.4f}): ROAR {verdict}."
    )


def leak_lines(document: dict) -> list[str]:
    """The cells where every marked step was removed and the runs still beat chance."""
    found = [
        (ranking, row, k)
        for ranking, rows in document["leaks"].items()
        for row, fractions in rows.items()
        for k in fractions
    ]
    if not found:
        return [
            "Nowhere did the retrained runs beat chance once every held-out marked step was "
            "removed: no ranking's choice of the other steps leaked the label."
        ]
    by_row: dict[tuple[str, str], list[str]] = {}
    for ranking, row, k in found:
        by_row.setdefault((ranking, row), []).append(k)
    cells = []
    for (ranking, row), fractions in by_row.items():
        numbers = document["rankings"][ranking][row]
        accuracy = [numbers[k]["heldout_accuracy"] for k in fractions]
        drops = {k: numbers[k]["accuracy_drop"]["mean"] for k in numbers}
        largest = max(drops, key=drops.__getitem__)
        cells.append(
            f"`{row}` of run {ranking} at k={', '.join(fractions)} (held-out accuracy "
            f"{min(accuracy):.4f} to {max(accuracy):.4f}; its drop {drops[largest]:.4f} at "
            f"k={largest} falls to {min(drops[k] for k in fractions):.4f})"
        )
    return [
        f"ROAR's known leak shows where every held-out marked step is removed and the "
        f"retrained runs still beat chance: {'; '.join(cells)}. The marked reading is gone, "
        "so the label comes from which other steps the ranking removed (a model's effects "
        "follow its prediction, so its ranking of the other steps depends on the label; "
        "Rong et al., ICML 2022). ROAR then scores the ranking lower for removing more, "
        "although each larger k removes every step a smaller one did."
    ]


def smoothing_lines(document: dict) -> list[str]:
    """Song et al.'s check, per ranking model and smoothed explainer."""
    lines = []
    for ranking, sources in document["smoothing"].items():
        for source, check in sources.items():
            by_verdict: dict[str, list[str]] = {}
            for k, entry in check["fractions"].items():
                by_verdict.setdefault(entry["verdict"], []).append(f"k={k}")
            parts = [f"{verdict} at {', '.join(ks)}" for verdict, ks in by_verdict.items()]
            outcome = (
                "scored better: the check fails"
                if check["scored_better"]
                else "never scored better"
            )
            lines.append(
                f"- `{source}{SMOOTHED}` of run {ranking} against `{source}`: {outcome} "
                f"({'; '.join(parts)})."
            )
    return lines


def section(document: dict) -> str:
    """The section in markdown: what was done, a table per ranking model, the reading."""
    rankings = [ranking for ranking in document["rankings"] if ranking != MODEL_FREE]
    lines = [
        "## Remove and retrain",
        "",
        "Hooker et al. (NeurIPS 2019, ROAR): each ranking removes the top k of every "
        "sequence's steps in the training and held-out data (the reading replaced by the "
        f"training split's mean reading, {document['removed_reading']:.4f}; the marker "
        f"kept), runs 1..{document['seeds']} retrain from their seeds on what is left, and "
        "the held-out accuracy drop against the same runs trained on the unmodified data "
        f"({interval(document['unmodified']['heldout_accuracy'])}) scores the ranking: "
        "higher, the ranking put first what the task needs. The rankings come from the "
        f"lesson's runs {', '.join(rankings)}, trained on the original data (as Hooker et "
        "al. rank); `rationale` (the marked step first) and `random` read no model. Each "
        "cell: the drop with its 95% multi-bootstrap interval over runs and held-out "
        "sequences, and in parentheses the share of held-out sequences whose marked step "
        "was removed. Method and settings: docs/field.md.",
        "",
    ]
    for ranking in rankings:
        lines += [
            f"Rankings of run {ranking}:",
            "",
            tables.markdown(ranking_table(document, ranking), stralign="right"),
            "",
        ]
    lines += [
        known_answer(document),
        "",
        "Which rankings bring the retrained runs to chance first (the 95% interval of their "
        "accuracy above the majority class reaches 0): "
        + "; ".join(first_to_chance(document, r) for r in [*rankings, MODEL_FREE])
        + ".",
        "",
        *leak_lines(document),
        "",
        "Song et al. (2023, arXiv:2304.13836): a ranking smoothed over neighbouring steps "
        "(a moving average of the explainer's scores) carries no more information about the "
        "model, so it must not score better; on the lesson a neighbour of the marked step "
        "carries nothing of the label. The smoothed drop minus its source's, paired:",
        "",
        *smoothing_lines(document),
    ]
    return "\n".join(lines) + "\n"


def headline(document: dict) -> dict:
    """Remove and retrain's held-out accuracy drop when each lesson run's attention
    ranking removes its smallest fraction of the steps."""
    return {"roar_attention_drop": document["headline"]["attention_drop"]}


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(40, section)]
