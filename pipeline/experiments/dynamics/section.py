"""report.md's section "The mechanism over training" (reports/dynamics/dynamics.json):
the reading, the tables (emergence, predictors, seeds per claim, noise, phases) and
the figures, and its headline.json entry."""

from __future__ import annotations

import pandas as pd

from pipeline.experiments.dynamics.reading import dynamics_reading
from pipeline.reporting import tables
from pipeline.reporting.inputs import image_lines

LITERATURE_K = {10: "PolyPythias (10)", 25: "MultiBERTs (25)"}


def number(value: float | None, spec: str) -> str:
    """`value` formatted, "n/a" where it is undefined (None)."""
    return "n/a" if value is None else format(value, spec)


def bounded(entry: dict, name: str = "auc") -> str:
    """A number and its 95% interval."""
    low, high = (number(entry[key], ".4f") for key in ("ci95_low", "ci95_high"))
    return f"{number(entry[name], '.4f')} [{low}, {high}]"


def emergence_table(document: dict) -> pd.DataFrame:
    found, order = document["emergence"], document["emergence"]["order"]
    rows = {
        "seeds": str(document["seeds"]),
        "share that never find the marked step": f"{found['share_never']:.4f}",
    }
    if "median" in found:
        rows["median epoch [95% interval]"] = (
            f"{found['median']:g} [{found['ci95_low']:g}, {found['ci95_high']:g}]"
        )
        rows["epochs, 5% to 95% of seeds"] = (
            f"{found['epochs']['q05']:g} to {found['epochs']['q95']:g}"
        )
    rows["rationale first / together / accuracy first"] = (
        f"{order['rationale_first']} / {order['together']} / {order['accuracy_first']}"
    )
    return pd.DataFrame({"value": list(rows.values())}, index=list(rows))


def predictors_table(document: dict) -> pd.DataFrame:
    entries = {k: v for k, v in document["predictors"].items() if isinstance(v, dict)}
    return pd.DataFrame(
        {"AUC [95% interval]": [bounded(entry) for entry in entries.values()]},
        index=[name.replace("@", " at epoch ") for name in entries],
    )


def claims_table(document: dict) -> pd.DataFrame:
    rows = []
    for claim, entry in document["claims"].items():
        row = {"claim": claim, "verdict": "holds" if entry["verdict"] else "fails"}
        for k, p in entry["probability"].items():
            row[LITERATURE_K.get(int(k), f"k={k}")] = f"{p:.3f}"
        k, low, high = (number(entry[key], "d") for key in ("k", "k_low", "k_high"))
        row["smallest k for 0.95 [interval]"] = f"{k} [{low}, {high}]"
        row["seeds"] = str(entry["seeds"])
        rows.append(row)
    return pd.DataFrame(rows)


def noise_table(document: dict) -> pd.DataFrame:
    noise, flip = document["noise"], document["flip"]
    rows = {
        "observed variance of held-out accuracy": f"{noise['observed']:.6f}",
        "predicted from per-example error rates (Jordan 2024)": f"{noise['predicted']:.6f}",
        "observed / predicted [95% interval]": bounded(noise, "ratio"),
        "the lesson's gap in std of a two-run difference": number(noise["gap_in_stds"], ".2f"),
        f"last bit of parameter {flip['parameter']} flipped ({flip['seeds']} seeds): share "
        "of stories changed": (f"{flip['share_story_changed']:.4f}"),
        "... share of held-out accuracies changed": f"{flip['share_accuracy_changed']:.4f}",
        "... mean absolute held-out accuracy change": f"{flip['mean_abs_accuracy_change']:.4f}",
        "... largest change of a trained parameter": f"{flip['max_parameter_change']:.2e}",
    }
    return pd.DataFrame({"value": list(rows.values())}, index=list(rows))


def phases_table(document: dict) -> pd.DataFrame:
    phases = document["phases"]
    return pd.DataFrame(
        [[f"{share:.2f}" for share in row] for row in phases["share_found"]],
        index=[f"init scale {scale:g}" for scale in phases["init_scales"]],
        columns=[f"lr {lr:g}" for lr in phases["lrs"]],
    )


def markdown(table: pd.DataFrame, index: bool = True) -> str:
    return tables.markdown(table, stralign="right", disable_numparse=True, index=index)


def mechanism_over_training(document: dict, images: list[tuple[str, str]]) -> str:
    """The section in markdown, its parts a blank line apart."""
    phases = document["phases"]
    parts = [
        "## The mechanism over training",
        "Every study seed measured at every epoch of its own training (reports/study/"
        "dynamics.parquet): when its top weight settles on the marked step (after Nanda et "
        "al. 2023's progress measures and PolyPythias 2025's phases), what its first epochs "
        "predict, how many seeds each of this report's claims needs (Dodge et al. 2020; "
        "Bouthillier et al. 2021), whether the gap is test-set noise (Jordan 2024), what one "
        "flipped bit does (Summers & Dinneen 2021), and which story wins across learning "
        "rates and init scales (Zhong et al. 2023). docs/dynamics.md has the definitions.",
        dynamics_reading(document),
        markdown(emergence_table(document)),
        markdown(predictors_table(document)),
        markdown(claims_table(document), index=False),
        markdown(noise_table(document)),
        f"Share of seeds that find the marked step (hit@1 at or above {document['found']:g}), "
        f"{phases['seeds']} seeds per cell:",
        markdown(phases_table(document)),
        *image_lines(images),
    ]
    return "\n\n".join(parts)


def plots(cfg, document: dict) -> list:
    """The section's figures (`drawing.Plot`s); matplotlib loads here, on use."""
    from pipeline.experiments.dynamics import figures

    return figures.dynamics_figures(document)


def headline(document: dict) -> dict:
    """The numbers `dvc metrics diff` shows for the dynamics."""
    found, noise = document["emergence"], document["noise"]
    return {
        "dynamics": {
            "emergence_median_epoch": found.get("median"),
            "share_never_found": found["share_never"],
            "variance_ratio": noise["ratio"],
            "flip_share_story_changed": document["flip"]["share_story_changed"],
            **{
                f"auc_{name.replace('@', '_at_')}": entry["auc"]
                for name, entry in document["predictors"].items()
                if isinstance(entry, dict)
            },
        }
    }


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(3, mechanism_over_training)]
