"""The lesson's tables, its golden numbers and a plain-language reading of them,
built from metrics.json and the step table, as plain text and as Markdown.

No matplotlib here: the figures live in pipeline/figures.py.
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from pipeline.config import Config

RUN_COLUMNS = {
    "accuracy": {"train_accuracy": "train", "heldout_accuracy": "held-out"},
    "weights": {"marker_mass": "marker mass", "argmax_hit": "argmax hit"},
    "ablation": {
        "weight_effect_agreement": "agreement",
        "top_weight_effect": "top-weight effect",
        "high_weight": "weight > {high}",
        "high_weight_low_effect": "of those effect < {low}",
    },
}
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
    columns = {k: v.format(high=high, low=low) for k, v in RUN_COLUMNS[group].items()}
    frame = pd.DataFrame.from_dict(document["runs"], orient="index")[list(columns)]
    frame = frame.rename(columns=columns)
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
    return "\n".join(lines)


# --- The lesson's golden numbers (SPEC section 5), shown beside a default run ---

GOLDEN = {
    "data": {
        "train_positive_rate": 0.3806,
        "heldout_positive_rate": 0.3667,
        "baseline": 0.6333,
        "any_step_above_threshold": 0.9903,
        "max_reading_at_marker": 0.0611,
        "uniform_weight": 0.0833,
    },
    "runs": {
        "1": {
            "train_accuracy": 0.9028,
            "heldout_accuracy": 0.8889,
            "marker_mass": 0.2721,
            "argmax_hit": 0.3444,
            "weight_effect_agreement": 0.5889,
            "top_weight_effect": 0.3318,
            "high_weight": 81,
            "high_weight_low_effect": 27,
        },
        "2": {
            "train_accuracy": 0.9889,
            "heldout_accuracy": 0.9944,
            "marker_mass": 0.9691,
            "argmax_hit": 1.0,
            "weight_effect_agreement": 1.0,
            "top_weight_effect": 0.4081,
            "high_weight": 180,
            "high_weight_low_effect": 43,
        },
    },
    "seed_gap": 0.1056,
    "first_weights": {
        1: "0.00 0.00 0.10 0.00 0.01 0.01 0.00 0.29 0.31 0.00 0.10 0.18",
        2: "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.97",
    },
}
LESSON = "lesson"

# Thresholds of the plain-language reading. Rough on purpose: they pick a word,
# the sentence always prints the number next to it.
POINTS_AT_MARKER = 0.9  # argmax hit: the top weight is on the marked step almost always
LEANS_TOWARDS = 2.0  # marker mass at least twice the uniform weight
AGREES = 0.9  # agreement: weight ranking matches ablation ranking almost always
PARTLY_AGREES = 0.5
LARGE_GAP = 0.05  # gap as a share of mean held-out accuracy
NOTICEABLE_GAP = 0.01


def is_lesson_config(cfg: Config) -> bool:
    """True when every setting that shapes a number is the lesson's, so SPEC's
    golden values apply. Tracking and output paths change no number."""
    mine, lesson = asdict(cfg), asdict(Config())
    return all(mine[key] == lesson[key] for key in mine if key not in ("tracking", "paths"))


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


def golden_mismatches(document: dict) -> list[str]:
    """Numbers that differ from the lesson's at 4 decimals (counts exactly)."""
    pairs = [(f"data {k}", document["data"][k], v) for k, v in GOLDEN["data"].items()]
    for seed, numbers in GOLDEN["runs"].items():
        run = document["runs"].get(seed, {})
        pairs += [(f"run {seed} {k}", run.get(k), v) for k, v in numbers.items()]
    pairs.append(("run-to-run gap", document["seed_gap"], GOLDEN["seed_gap"]))
    return [
        f"{name} ({ours if ours is None else round(ours, 4)} vs {lesson})"
        for name, ours, lesson in pairs
        if ours is None or round(ours, 4) != lesson
    ]


# --- A plain-language reading, generated from the numbers ---


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
    share = gap / mean
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


# --- report.md ---


def image_lines(images: list[tuple[str, str]]) -> list[str]:
    return [f"![{caption}]({link})" for caption, link in images]


def markdown_report(
    document: dict,
    steps: pd.DataFrame,
    cfg: Config,
    golden: bool,
    images: dict[str, list[tuple[str, str]]],
) -> str:
    """The whole report.md. `golden` puts the lesson's value beside each number;
    `images` maps a section (accuracy, weights, ablation) to (caption, relative link)."""
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
        "## Ablation",
        "Removing step t from the softmax moves P(y=1) by the effect of t.",
        runs_markdown(document, "ablation", golden, high, low),
        *image_lines(images.get("ablation", [])),
    ]
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
