"""The lesson's tables, built from metrics.json and the step table."""

from __future__ import annotations

import pandas as pd

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


def text_tables(document: dict, steps: pd.DataFrame, high: float, low: float) -> str:
    """The lesson's printed tables, 4 decimals."""
    fmt = "{:.4f}".format
    first = first_example_weights(steps)
    marked = int(steps.loc[(steps["id"] == steps["id"].min()) & steps["is_marked"], "step"].iloc[0])
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
