"""The section "Erasure and disagreement" of report.md, from reports/erasure/metrics.json
(the erasure stage, this folder): tables and a reading generated from the numbers,
saying what each test says and whether it agrees with the known answer (the task's
rationale decides every label)."""

from __future__ import annotations

import pandas as pd

from pipeline.reporting import tables

PAIR_METRICS = ("feature@1", "rank@1", "feature@3", "rank@3", "sign@3", "spearman", "pairwise_rank")


def interval(entry: dict) -> str:
    """A study number: its mean over runs and the 95% bootstrap interval."""
    if entry["mean"] is None:
        return "-"
    return f"{entry['mean']:.4f} [{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}]"


def plain(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def single_table(document: dict) -> pd.DataFrame:
    columns = {
        "top_flip": "top-weight step flips",
        "other_flip": "a random other step flips",
        "top_flip_marked": "flipping top step is marked",
        "rationale_flip": "marked step alone flips",
    }
    rows = {f"run {seed}": run["erasure"]["attention"] for seed, run in document["runs"].items()}
    table = [
        {"runs": name, **{c: plain(v[k]) for k, c in columns.items()}} for name, v in rows.items()
    ]
    study = document["study"]["erasure"]["attention"]
    name = f"study ({document['study']['seeds']} seeds)"
    table.append({"runs": name, **{c: interval(study[k]) for k, c in columns.items()}})
    return pd.DataFrame(table)


def flip_table(document: dict) -> pd.DataFrame:
    study = document["study"]["flip"]
    rows = []
    for ranking, entry in study.items():
        row = {"ranking": ranking}
        for seed, run in document["runs"].items():
            row[f"removed, run {seed}"] = plain(run["flip"][ranking]["removed"])
        row["removed, study"] = interval(entry["removed"])
        row["never flips, study"] = interval(entry["never"])
        row["flipping step is marked, study"] = interval(entry["flip_marked"])
        rows.append(row)
    return pd.DataFrame(rows)


def pair_table(document: dict) -> pd.DataFrame:
    pairs = document["study"]["pairs"]
    return pd.DataFrame(
        [
            {"pair": pair, **{m: plain(values[m]["mean"]) for m in PAIR_METRICS if m in values}}
            for pair, values in pairs.items()
        ]
    )


def rationale_table(document: dict) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "explainer": row,
                "top-|R| holds R (FA)": interval(values["feature"]),
                "Spearman": interval(values["spearman"]),
                "R above the rest (PRA)": interval(values["pairwise_rank"]),
            }
            for row, values in document["study"]["rationale"].items()
        ]
    )


def disagreement_table(document: dict) -> pd.DataFrame:
    names = {
        "r_pairwise_rank_both_wrong": "r(PRA, both miss)",
        "both_wrong_top1_agree": "both miss | top-1 agree",
        "both_wrong_top1_differ": "both miss | top-1 differ",
    }
    rows = [
        {
            "runs": f"run {seed}",
            **{c: plain(run["disagreement"]["pairs"][k]) for k, c in names.items()},
        }
        for seed, run in document["runs"].items()
    ]
    study = document["study"]["disagreement"]["pairs"]
    rows.append({"runs": "study", **{c: interval(study[k]) for k, c in names.items()}})
    return pd.DataFrame(rows)


def _above(entry: dict, value: float | None) -> bool:
    """Whether the interval lies above `value`; False where either is undefined."""
    return None not in (entry["ci95_low"], value) and entry["ci95_low"] > value


def _below(entry: dict, value: float) -> bool:
    return entry["ci95_high"] is not None and entry["ci95_high"] < value


def _defined(means: dict) -> dict:
    """The entries with a value (a mean over no run is None)."""
    return {key: value for key, value in means.items() if value is not None}


def erasure_reading(document: dict) -> str:
    single = document["study"]["erasure"]["attention"]
    top, other = single["top_flip"], single["other_flip"]
    verdict = (
        "more often than a random other step: by this test the weights point at what matters"
        if _above(top, other["ci95_high"])
        else "no more often than a random other step: by this test the weights say little"
    )
    marked = single["top_flip_marked"]
    if marked["mean"] is None:  # no run's top-step erasure flipped a decision
        known = (
            "The top step's erasure never flips a decision here, so whether the flipping step "
            "is the marked one is undefined"
        )
    else:
        agrees = (
            "agrees with the known answer: the step that flips is the marked one"
            if _above(marked, 0.5)
            else "is not the known answer: the flipping top step is mostly not the marked one"
        )
        known = (
            "Where the top step's erasure flips, it is the marked step in "
            f"{marked['mean']:.4f} of the cases, which {agrees}"
        )
    flips = {r: e["removed"]["mean"] for r, e in document["study"]["flip"].items()}
    ranked = sorted((v, r) for r, v in flips.items() if v is not None)
    if ranked:
        soonest, latest = ranked[0][1], ranked[-1][1]
        order = (
            f"Erasing in each ranking's order, {soonest} reaches a flip after the smallest "
            f"share of the steps ({flips[soonest]:.4f}), {latest} after the largest "
            f"({flips[latest]:.4f})."
        )
    else:
        order = "Erasing in each ranking's order, no ranking ever reaches a flip."
    return (
        f"Erasing the top-weight step flips {plain(top['mean'])} of the decisions, a random "
        f"other step {plain(other['mean'])}: {verdict}. {known}; erasing the marked step alone "
        f"flips {plain(single['rationale_flip']['mean'])} of the decisions, so in the rest the "
        f"model's decision survives the loss of the step that defines its label. {order}"
    )


def agreement_reading(document: dict) -> str:
    rationale = document["study"]["rationale"]
    feature = _defined({r: v["feature"]["mean"] for r, v in rationale.items()})
    best = max(feature, key=feature.__getitem__)
    pairs = document["study"]["pairs"]
    pra = _defined({p: v["pairwise_rank"]["mean"] for p, v in pairs.items()})
    most, least = max(pra, key=pra.__getitem__), min(pra, key=pra.__getitem__)
    study = document["study"]["disagreement"]["pairs"]
    r = study["r_pairwise_rank_both_wrong"]
    if _below(r, 0.0):
        answer = "yes: the less a pair agrees, the more often both miss the marked step"
    elif _above(r, 0.0):
        answer = "no, the opposite: pairs that agree more miss the marked step together more often"
    else:
        answer = "no: the interval of the correlation holds 0"
    agree, differ = study["both_wrong_top1_agree"], study["both_wrong_top1_differ"]
    return (
        f"Against the true rationale, {best}'s top steps hold it most often "
        f"({rationale[best]['feature']['mean']:.4f}). Between explainers, {most} agree most "
        f"(pairwise rank agreement {pra[most]:.4f}), {least} least ({pra[least]:.4f}). Does "
        f"disagreement between two explainers predict that both are wrong? {answer} "
        f"(r = {interval(r)}). Where a pair's top steps agree, both miss the marked step in "
        f"{plain(agree['mean'])} of the examples; where they differ, in {plain(differ['mean'])}."
    )


def section(document: dict) -> str:
    """report.md's section on the erasure stage's tests."""
    seeds = document["study"]["seeds"]
    parts = [
        "## Erasure and disagreement",
        "",
        "Two of the field's newer tests, run where the answer is known (docs/field.md): "
        "Serrano & Smith's erasure (ACL 2019) and Krishna et al.'s disagreement problem "
        f"(TMLR 2024), on the lesson's runs and the study's first {seeds} runs (study: the "
        "mean over runs and its 95% bootstrap interval).",
        "",
        "### Erasing the top-weight step",
        "",
        tables.markdown(single_table(document), index=False),
        "",
        "### Erasing steps in each ranking's order until the decision flips",
        "",
        "Share of the steps removed at the first flip (over the examples that flip), share "
        "of examples that never flip, and whether the step that completed the flip is marked.",
        "",
        tables.markdown(flip_table(document), index=False),
        "",
        erasure_reading(document),
        "",
        "### Agreement between explainers (study means)",
        "",
        tables.markdown(pair_table(document), index=False),
        "",
        "### Agreement with the true rationale R",
        "",
        tables.markdown(rationale_table(document), index=False),
        "",
        "### Does disagreement predict that both explainers are wrong?",
        "",
        tables.markdown(disagreement_table(document), index=False),
        "",
        agreement_reading(document),
        "",
    ]
    return "\n".join(parts)


def headline(document: dict) -> dict:
    """The erasure stage's headline numbers (reports/erasure/metrics.json), study means:
    `erasure` (the top-weight step's flips against a random other step's), `flip`
    (attention's and the random ranking's share of steps erased at the first flip) and
    `agreement` (r between a pair's agreement and both explainers missing the rationale)."""
    study = document["study"]
    single, flips = study["erasure"]["attention"], study["flip"]
    return {
        "erasure": {key: single[key]["mean"] for key in ("top_flip", "other_flip")},
        "flip": {
            f"{row}_removed": flips[row]["removed"]["mean"] for row in ("attention", "random")
        },
        "agreement": {
            "r_pairwise_rank_both_wrong": study["disagreement"]["pairs"][
                "r_pairwise_rank_both_wrong"
            ]["mean"]
        },
    }


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(30, section)]
