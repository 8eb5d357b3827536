"""A plain-language reading of the mechanism over training, generated from
dynamics.json. Each sentence picks its words by a named threshold and prints the
number."""

from __future__ import annotations

from pipeline.reporting.reading import percent

USEFUL_AUC = 0.7  # an early number predicts the story from here on
NOISE_LIKE = (0.8, 1.25)  # observed/predicted variance ratio read as "test-set noise"


def emergence_sentence(document: dict) -> str:
    found = document["emergence"]
    order = found["order"]
    if "median" not in found:
        return f"No seed's hit@1 settles at or above {document['found']:g}."
    first = (
        "the rationale comes first"
        if order["rationale_first"] > order["accuracy_first"]
        else "the accuracy comes first"
    )
    return (
        f"Over {document['seeds']} seeds, hit@1 settles at or above {document['found']:g} at "
        f"a median epoch of {found['median']:g} (95% bootstrap interval {found['ci95_low']:g} "
        f"to {found['ci95_high']:g}); {percent(found['share_never'])} of the seeds never get "
        f"there. Of the {order['seeds']} seeds whose hit@1 and held-out accuracy both settle, "
        f"{order['rationale_first']} find the marked step before their accuracy settles, "
        f"{order['together']} at the same epoch and {order['accuracy_first']} after: "
        f"{first}."
    )


def predictor_sentence(document: dict) -> str:
    entries = {
        k: v
        for k, v in document["predictors"].items()
        if isinstance(v, dict) and v["auc"] is not None
    }
    if not entries:
        return "Every seed ends with the same story, so no early number can predict it."
    best_name, best = max(entries.items(), key=lambda item: (item[1]["auc"], item[0]))
    verdict = "predicts" if best["auc"] >= USEFUL_AUC else "barely predicts"
    name, epoch = best_name.split("@")
    return (
        f"The best early predictor of a seed's final story is its {name.replace('_', ' ')} "
        f"at epoch {epoch}: AUC {best['auc']:.4f} [{best['ci95_low']:.4f}, "
        f"{best['ci95_high']:.4f}], which {verdict} it."
    )


def claims_sentence(document: dict) -> str:
    parts = []
    for claim, entry in document["claims"].items():
        k = entry["k"]
        needed = (
            f"needs {k} seed{'s' if k != 1 else ''}"
            if k is not None
            else "is not reached reliably at 100 seeds"
        )
        parts.append(f"'{claim}' ({'holds' if entry['verdict'] else 'fails'}) {needed}")
    return (
        "Resampling studies of k seeds from the full set: "
        + "; ".join(parts)
        + " to reach the full verdict 95% of the time."
    )


def noise_sentence(document: dict) -> str:
    noise = document["noise"]
    if noise["ratio"] is None or noise["gap_in_stds"] is None:
        return (
            "No held-out sequence's outcome varies over the runs, so Jordan's prediction "
            "of test-set noise has nothing to compare."
        )
    low, high = NOISE_LIKE
    verdict = (
        "the seeds' spread is what test-set noise alone predicts"
        if low <= noise["ratio"] <= high
        else "the seeds differ by more than test-set noise"
        if noise["ratio"] > high
        else "the seeds differ by less than independent examples would"
    )
    return (
        f"Jordan's prediction from per-example error rates gives a held-out accuracy "
        f"variance of {noise['predicted']:.6f} against {noise['observed']:.6f} observed "
        f"(ratio {noise['ratio']:.4f} [{noise['ci95_low']:.4f}, {noise['ci95_high']:.4f}]): "
        f"{verdict}. The lesson's gap {noise['observed_gap']:.4f} is "
        f"{noise['gap_in_stds']:.2f} standard deviations of the difference of two runs."
    )


def flip_sentence(document: dict) -> str:
    flip = document["flip"]
    moved = flip["max_parameter_change"]
    washed = (
        "the flip is washed out: every trained parameter is the same at 8 decimals"
        if moved == 0
        else f"the trained parameters move by at most {moved:.2e}"
    )
    return (
        f"Flipping the last bit of initial parameter {flip['parameter']} (Summers & Dinneen "
        f"2021) changes the story of {percent(flip['share_story_changed'])} of the "
        f"{flip['seeds']} seeds trained again and "
        f"the held-out accuracy of {percent(flip['share_accuracy_changed'])} (mean absolute "
        f"change {flip['mean_abs_accuracy_change']:.4f}); {washed}. Full-batch descent on "
        "this model does not amplify a last bit into another story: the run-to-run gap "
        "comes from the init, not from numerical noise."
        if flip["share_story_changed"] == 0
        else f"Flipping the last bit of initial parameter {flip['parameter']} (Summers & "
        f"Dinneen 2021) changes the story of {percent(flip['share_story_changed'])} of the "
        f"seeds and the held-out accuracy of {percent(flip['share_accuracy_changed'])} (mean "
        f"absolute change {flip['mean_abs_accuracy_change']:.4f}); {washed}: numerical noise "
        "alone moves some seeds to the other story."
    )


def dynamics_reading(document: dict) -> str:
    return " ".join(
        sentence(document)
        for sentence in (
            emergence_sentence,
            predictor_sentence,
            claims_sentence,
            noise_sentence,
            flip_sentence,
        )
    )
