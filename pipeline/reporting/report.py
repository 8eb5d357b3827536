"""The lesson's tables, its golden numbers and a plain-language reading of them,
built from metrics.json and the step table, as plain text and as Markdown.

No matplotlib here: the figures live in pipeline/reporting/figures.py.
"""

from __future__ import annotations

import pandas as pd

from pipeline.analysis import registry
from pipeline.analysis.golden import GOLDEN, LESSON
from pipeline.config import Config
from pipeline.reporting.reading import (
    faithfulness_reading,
    pair_key,
    reading,
    sanity_reading,
    study_reading,
)

DATA_ROWS = {
    "train_positive_rate": "positive rate, train",
    "heldout_positive_rate": "positive rate, held-out",
    "baseline": "baseline (majority class)",
    "any_step_above_threshold": "any candidate step above threshold",
    "max_reading_at_marker": "largest reading at the marked step",
    "uniform_weight": "uniform weight",
}


def data_table(document: dict) -> pd.DataFrame:
    numbers = document["data"]
    return pd.DataFrame(
        {"quantity": list(DATA_ROWS.values()), "value": [numbers[k] for k in DATA_ROWS]}
    )


def run_table(document: dict, group: str, high: float = 0.5, low: float = 0.05) -> pd.DataFrame:
    columns = {
        key: registry.METRICS[key].short.format(high=high, low=low)
        for key in registry.in_table(group)
    }
    frame = pd.DataFrame.from_dict(document["runs"], orient="index")[list(columns)]
    frame = frame.rename(columns=columns)
    frame.index = [f"run {seed}" for seed in frame.index]
    return frame


def variant_table(document: dict) -> pd.DataFrame | None:
    """The variant's own per-run numbers (sink mass; per-head marker mass and argmax
    hit), one row per run; None for a model without any (the lesson)."""
    frame = pd.DataFrame.from_dict(document["runs"], orient="index")
    extras = [key for key in frame.columns if key not in registry.METRICS]
    if not extras:
        return None
    frame = frame[extras].rename(columns=lambda key: key.replace("_", " "))
    frame.index = [f"run {seed}" for seed in frame.index]
    return frame


def first_example_weights(steps: pd.DataFrame) -> pd.DataFrame:
    """Weights of the first held-out sequence, one row per seed."""
    first = steps[steps["id"] == steps["id"].min()]
    return first.pivot(index="seed", columns="step", values="weight")


def first_marked_step(steps: pd.DataFrame) -> int:
    first = steps[(steps["id"] == steps["id"].min()) & steps["is_marked"]]
    return int(first["step"].iloc[0])


def text_tables(document: dict, steps: pd.DataFrame, high: float, low: float) -> str:
    """The lesson's printed tables, 4 decimals."""
    fmt = "{:.4f}".format
    first = first_example_weights(steps)
    marked = first_marked_step(steps)
    lines = [
        f"sequences {document['data']['sequences']}",
        data_table(document).to_string(index=False, formatters={"value": fmt}),
        "",
        f"parameters per run {document['parameters']}",
        run_table(document, "accuracy").to_string(float_format=fmt),
        f"run-to-run gap {document['seed_gap']:.4f}   held-out mean "
        f"{document['heldout_accuracy_mean']:.4f} std {document['heldout_accuracy_std']:.4f}",
        "",
        f"uniform weight {document['data']['uniform_weight']:.4f}",
        run_table(document, "weights").to_string(float_format=fmt),
        f"first held-out sequence, marked step {marked}:",
        *(
            f"run {seed} weights " + " ".join(f"{w:.2f}" for w in row)
            for seed, row in first.iterrows()
        ),
        "",
        run_table(document, "ablation", high, low).to_string(float_format=fmt),
    ]
    extras = variant_table(document)
    if extras is not None:
        lines += ["", extras.to_string(float_format=fmt)]
    return "\n".join(lines)


def formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as integers, everything else at the lesson's 4 decimals."""

    def column(values: pd.Series) -> pd.Series:
        if pd.api.types.is_integer_dtype(values):
            return values.astype(str)
        return values.map(lambda v: "" if pd.isna(v) else f"{v:.4f}")

    return frame.apply(column)


def beside_golden(table: pd.DataFrame, golden: pd.DataFrame) -> pd.DataFrame:
    """Each column followed by its lesson value, `x` then `x (lesson)`; rows the
    lesson never printed get an empty cell."""
    golden = formatted(golden).reindex(table.index).fillna("")
    ours = formatted(table)
    columns = {}
    for name in table.columns:
        columns[name] = ours[name]
        columns[f"{name} ({LESSON})"] = golden[name]
    return pd.DataFrame(columns, index=table.index)


def markdown_table(table: pd.DataFrame, golden: pd.DataFrame | None) -> str:
    shown = formatted(table) if golden is None else beside_golden(table, golden)
    return shown.to_markdown(stralign="right", disable_numparse=True)


def data_markdown(document: dict, golden: bool) -> str:
    table = data_table(document).set_index("quantity")
    lesson = data_table({"data": GOLDEN["data"]}).set_index("quantity") if golden else None
    return markdown_table(table, lesson)


def runs_markdown(document: dict, group: str, golden: bool, high: float, low: float) -> str:
    table = run_table(document, group, high, low)
    lesson = run_table(GOLDEN, group, high, low) if golden else None
    if group == "weights":
        # Beside the marker mass: what any step gets from attention that ignores the input.
        table["uniform weight"] = document["data"]["uniform_weight"]
        if lesson is not None:
            lesson["uniform weight"] = GOLDEN["data"]["uniform_weight"]
    return markdown_table(table, lesson)


def across_seeds_markdown(document: dict, golden: bool) -> str:
    rows = {
        "run-to-run gap": "seed_gap",
        "held-out mean": "heldout_accuracy_mean",
        "held-out std": "heldout_accuracy_std",
    }
    table = pd.DataFrame({"value": [document[key] for key in rows.values()]}, index=list(rows))
    lesson = pd.DataFrame({"value": [GOLDEN["seed_gap"]]}, index=["run-to-run gap"])
    return markdown_table(table, lesson if golden else None)


def first_weights_markdown(steps: pd.DataFrame, golden: bool) -> str:
    """The first held-out sequence's weights at 2 decimals, the lesson's rows below."""
    rows = {f"run {seed}": list(row) for seed, row in first_example_weights(steps).iterrows()}
    table = pd.DataFrame(rows).T.map(lambda w: f"{w:.2f}")
    if golden:
        lesson = {f"run {k} ({LESSON})": v.split() for k, v in GOLDEN["first_weights"].items()}
        table = pd.concat([table, pd.DataFrame(lesson, index=table.columns).T])
    table.columns = [f"step {step}" for step in table.columns]
    return table.to_markdown(stralign="right", disable_numparse=True)


STUDY_COLUMNS = ("mean", "std", "min", "q05", "median", "q95", "max", "ci95_low", "ci95_high")


def study_table(summary: dict) -> pd.DataFrame:
    """One row per per-seed number: its distribution over the study's seeds."""
    rows = {
        registry.METRICS[key].label: [summary[key][c] for c in STUDY_COLUMNS]
        for key in registry.means()
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(STUDY_COLUMNS))


def study_lesson_markdown(summary: dict) -> str:
    gap = summary["pair_gap"]
    rows = {
        "lesson's gap (train.seeds)": gap["observed"],
        "mean gap over all seed pairs": gap["mean"],
        "share of pairs with gap >= lesson's": gap["p_at_least_observed"],
        "share of seeds with marker mass > 0.5": summary["share_marker_mass_above_half"],
        **{
            f"run {seed}: share of seeds strictly below": entry["percentile"]
            for seed, entry in summary["lesson_seeds"].items()
        },
    }
    table = pd.DataFrame({"value": list(rows.values())}, index=list(rows))
    return markdown_table(table, None)


def study_section(summary: dict, table: pd.DataFrame, images: list[tuple[str, str]]) -> list[str]:
    """The "Seeds at scale" section: reading, distribution table, gap table, figures."""
    return [
        "## Seeds at scale",
        f"Runs 1..{summary['seeds']}, each from its own init seed, on the same data and "
        "settings. ci95 is a 95% multi-bootstrap interval of the mean; std is the population "
        "std over seeds.",
        study_reading(summary, table),
        markdown_table(study_table(summary), None),
        study_lesson_markdown(summary),
        *image_lines(images),
    ]


def explainer_table(run: dict) -> pd.DataFrame:
    """One row per explainer (the random baseline last), one column per metric."""
    return pd.DataFrame.from_dict(run, orient="index")[list(registry.SCORES)]


def study_explainer_table(summary: dict) -> pd.DataFrame:
    """Mean over study runs, with the share of runs on which the explainer ranks first."""
    rows = {}
    for name, entry in summary["explainers"].items():
        rows[name] = {
            metric: f"{numbers['mean']:.4f} [{numbers['ci95_low']:.4f}, {numbers['ci95_high']:.4f}]"
            + (f" {numbers['share_first']:.0%}" if "share_first" in numbers else "")
            for metric, numbers in entry.items()
        }
    return pd.DataFrame.from_dict(rows, orient="index")[list(registry.SCORES)]


def paired_table(summary: dict, reference: str = registry.ATTENTION) -> pd.DataFrame:
    """One row per explainer against `reference`: per metric the paired difference
    reference - explainer [95% interval] and the shares of seeds each is better on."""
    rows: dict[str, dict[str, str]] = {}
    for name in summary["explainers"]:
        for metric, pairs in summary["paired"].items():
            entry = pairs.get(pair_key(reference, name))
            if entry is None:
                continue
            rows.setdefault(f"{reference} vs {name}", {})[metric] = (
                f"{entry['difference']:+.4f} [{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}] "
                f"{entry['share_first_better']:.0%}/{entry['share_second_better']:.0%}"
            )
    return pd.DataFrame.from_dict(rows, orient="index").reindex(columns=list(summary["paired"]))


def robustness_table(robustness: dict) -> pd.DataFrame:
    """One row per (run, explainer): sensitivity_max and infidelity, 3 significant
    digits (infidelity is small: a few 1e-6 to 1e-4 on the lesson)."""
    rows = {
        f"run {seed}: {name}": {metric: f"{value:.3g}" for metric, value in numbers.items()}
        for seed, explainers in robustness.items()
        for name, numbers in explainers.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def sanity_table(sanity: dict) -> pd.DataFrame:
    """One row per explainer, one column per randomisation step (cascading: re-drawn up
    to the group; alone: that group only; labels: trained on permuted labels): the
    mean Spearman with the trained model's scores."""
    prefixes = {"cascading": "up to ", "independent": "only ", "labels": ""}
    columns = {
        f"{prefixes[test]}{step}": {row: f"{e['spearman']['mean']:.4f}" for row, e in rows.items()}
        for test, steps in sanity["tests"].items()
        for step, rows in steps.items()
    }
    return pd.DataFrame(columns)


def faithfulness_section(document: dict, summary: dict, images: list[tuple[str, str]]) -> list[str]:
    """The "Which explanation is faithful?" section."""
    higher = registry.higher_is_better()
    direction = ", ".join(f"{m} {'higher' if up else 'lower'}" for m, up in higher.items())
    explainers = [row for row in next(iter(document["runs"].values())) if row != registry.RANDOM]
    parts = [
        "## Which explanation is faithful?",
        f"{registry.explainers_sentence(explainers)}; `{registry.RANDOM}` is a random order, for "
        f"reference. Better is: {direction}.",
        faithfulness_reading(document, summary, higher),
    ]
    for seed, run in document["runs"].items():
        parts += [f"Run {seed}:", markdown_table(explainer_table(run), None)]
    parts += [
        f"Over the {summary['seeds']} study runs: mean [95% bootstrap interval over runs] and "
        "the share of runs on which the explainer ranks first:",
        study_explainer_table(summary).to_markdown(stralign="right", disable_numparse=True),
        f"Attention against each explainer, paired on the same {summary['seeds']} runs and "
        "held-out sequences: attention's mean minus the explainer's [95% multi-bootstrap "
        "interval, seeds and sequences resampled together], then the shares of runs on which "
        "attention / the explainer is better (the rest tie; '-': the pair does not compete on "
        "that metric):",
        paired_table(summary).fillna("-").to_markdown(stralign="right", disable_numparse=True),
    ]
    if "robustness" in document:
        parts += [
            "Robustness of the explainers captum drives (captum.metrics; Yeh et al. 2019), "
            "mean over held-out sequences per run: `sensitivity_max`, the largest change of "
            "the attributions under a perturbation in a small L-infinity ball (lower is "
            "steadier); `infidelity` with normalize=True, the squared error of what the "
            "attributions predict a Gaussian perturbation does to P(y=1) (lower is more "
            "faithful):",
            robustness_table(document["robustness"]).to_markdown(
                stralign="right", disable_numparse=True
            ),
        ]
    if "sanity" in summary:
        parts += [
            "\n".join(sanity_reading(summary["sanity"])),
            sanity_table(summary["sanity"]).to_markdown(stralign="right", disable_numparse=True),
        ]
    parts += image_lines(images)
    return parts


# --- report.md ---


def image_lines(images: list[tuple[str, str]]) -> list[str]:
    return [f"![{caption}]({link})" for caption, link in images]


def heatmap_cap(runs: int, shown: int) -> list[str]:
    """Why fewer heatmaps than runs: said in the report, not left to be noticed."""
    if shown == 0 or shown >= runs:
        return []
    return [
        f"Heatmaps for the first {shown} of {runs} runs only: one picture per run would "
        "drown the report. Every run's weights are in steps.csv, and its marker mass and "
        "argmax hit in the table above."
    ]


def markdown_report(
    document: dict,
    steps: pd.DataFrame,
    cfg: Config,
    golden: bool,
    images: dict[str, list[tuple[str, str]]],
    study: tuple[dict, pd.DataFrame] | None = None,
    faithfulness: tuple[dict, dict] | None = None,
) -> str:
    """The whole report.md. `golden` puts the lesson's value beside each number;
    `images` maps a section (accuracy, weights, ablation, study) to (caption, relative
    link); `study` is the seed study's (summary, per-seed table) and `faithfulness`
    the battery's (faithfulness.json, study summary), where there are."""
    high, low = cfg.eval.high_weight, cfg.eval.low_effect
    seeds = ", ".join(document["runs"])
    setting = (
        f"{document['data']['sequences']} sequences of {cfg.data.steps} steps "
        f"(data seed {cfg.data.seed}), runs {seeds}, {cfg.train.epochs} epochs at step size "
        f"{cfg.train.lr:g}, {cfg.train.dtype}."
    )
    source = (
        f"The lesson's configuration: each number stands beside its value in the lesson "
        f"(columns marked ({LESSON}))."
        if golden
        else "Not the lesson's configuration, so the lesson's numbers do not apply."
    )
    sections = [
        "# Do attention weights explain the model?",
        f"{setting} {source}",
        "## Reading",
        reading(document, golden, high, low),
        "## Data checks",
        data_markdown(document, golden),
        "## Accuracy",
        runs_markdown(document, "accuracy", golden, high, low),
        across_seeds_markdown(document, golden),
        *image_lines(images.get("accuracy", [])),
        "## Attention weights",
        runs_markdown(document, "weights", golden, high, low),
        f"First held-out sequence, marked step {first_marked_step(steps)}:",
        first_weights_markdown(steps, golden),
        *image_lines(images.get("weights", [])),
        *heatmap_cap(len(document["runs"]), len(images.get("weights", []))),
        "## Ablation",
        "Removing step t from the softmax moves P(y=1) by the effect of t.",
        runs_markdown(document, "ablation", golden, high, low),
        *image_lines(images.get("ablation", [])),
    ]
    extras = variant_table(document)
    if extras is not None:
        sections += [
            f"## Model variant: {cfg.model.kind}",
            f"{document['parameters']} parameters per run. The numbers only this variant has "
            "(the weights above are its pooling weights over the real steps; for multihead "
            "their mean over heads):",
            markdown_table(extras, None),
        ]
    if study is not None:
        sections += study_section(*study, images.get("study", []))
    if faithfulness is not None:
        sections += faithfulness_section(*faithfulness, images.get("faithfulness", []))
    return "\n\n".join(sections) + "\n"


def step_weights(steps: pd.DataFrame) -> pd.DataFrame:
    """Mean held-out weight per (seed, step); `run_step` labels one bar each, since a
    horizontal bar plot would stack seeds that share a step."""
    frame = steps.groupby(["seed", "step"], as_index=False)["weight"].mean()
    frame = frame.rename(columns={"weight": "mean_weight"})
    frame["run_step"] = (
        "run " + frame["seed"].astype(str) + " step " + frame["step"].map("{:02d}".format)
    )
    return frame
