"""report.md: its sections in order, each one function of the report's inputs.

A new section is one function `(ReportInputs) -> list[str]` (its paragraphs and
tables, or [] when its inputs are missing) placed in SECTIONS. No matplotlib here:
the figures live in the *figures.py modules, and a section links them.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.analysis.golden import LESSON
from pipeline.core.kinds import experiment_part
from pipeline.reporting.inputs import ReportInputs, image_lines
from pipeline.reporting.lesson_tables import (
    across_seeds_markdown,
    data_markdown,
    first_marked_step,
    first_weights_markdown,
    markdown_table,
    runs_markdown,
    variant_table,
)
from pipeline.reporting.reading import reading

TITLE = "Do attention weights explain the model?"


def title(inputs: ReportInputs) -> list[str]:
    cfg, document = inputs.cfg, inputs.document
    setting = (
        f"{document['data']['sequences']} sequences of {cfg.data.steps} steps "
        f"(data seed {cfg.data.seed}), runs {', '.join(document['runs'])}, {cfg.train.epochs} "
        f"epochs at step size {cfg.train.lr:g}, {cfg.train.dtype}."
    )
    source = (
        f"The lesson's configuration: each number stands beside its value in the lesson "
        f"(columns marked ({LESSON}))."
        if inputs.golden
        else "Not the lesson's configuration, so the lesson's numbers do not apply."
    )
    return [f"# {TITLE}", f"{setting} {source}"]


def thresholds(inputs: ReportInputs) -> tuple[float, float]:
    return inputs.cfg.eval.high_weight, inputs.cfg.eval.low_effect


def plain_reading(inputs: ReportInputs) -> list[str]:
    return ["## Reading", reading(inputs.document, inputs.golden, *thresholds(inputs))]


def data_checks(inputs: ReportInputs) -> list[str]:
    return ["## Data checks", data_markdown(inputs.document, inputs.golden)]


def accuracy(inputs: ReportInputs) -> list[str]:
    return [
        "## Accuracy",
        runs_markdown(inputs.document, "accuracy", inputs.golden, *thresholds(inputs)),
        across_seeds_markdown(inputs.document, inputs.golden),
        *image_lines(inputs.images.get("accuracy", [])),
    ]


def heatmap_cap(runs: int, shown: int) -> list[str]:
    """Why fewer heatmaps than runs: said in the report, not left to be noticed."""
    if shown == 0 or shown >= runs:
        return []
    return [
        f"Heatmaps for the first {shown} of {runs} runs only: one picture per run would "
        "drown the report. Every run's weights are in steps.csv, and its marker mass and "
        "argmax hit in the table above."
    ]


def attention_weights(inputs: ReportInputs) -> list[str]:
    heatmaps = inputs.images.get("weights", [])
    return [
        "## Attention weights",
        runs_markdown(inputs.document, "weights", inputs.golden, *thresholds(inputs)),
        f"First held-out sequence, marked step {first_marked_step(inputs.steps)}:",
        first_weights_markdown(inputs.steps, inputs.golden),
        *image_lines(heatmaps),
        *heatmap_cap(len(inputs.document["runs"]), len(heatmaps)),
    ]


def ablation(inputs: ReportInputs) -> list[str]:
    return [
        "## Ablation",
        "Removing step t from the softmax moves P(y=1) by the effect of t.",
        runs_markdown(inputs.document, "ablation", inputs.golden, *thresholds(inputs)),
        *image_lines(inputs.images.get("ablation", [])),
    ]


def model_variant(inputs: ReportInputs) -> list[str]:
    extras = variant_table(inputs.document)
    if extras is None:
        return []
    return [
        f"## Model variant: {inputs.cfg.model.kind}",
        f"{inputs.document['parameters']} parameters per run. The numbers only this variant "
        "has (the weights above are its pooling weights over the real steps; for multihead "
        "their mean over heads):",
        markdown_table(extras, None),
    ]


Section = Callable[[ReportInputs], list[str]]


def experiments(inputs: ReportInputs) -> list[str]:
    """Each experiment's sections where its stage ran, in their places' order (a
    section with nothing to show, "", is left out). A section module that draws
    figures (`plots`) has its sections called with its figures' links too."""
    placed = []
    for name, results in inputs.experiments.items():
        if results is None:
            continue
        module = experiment_part(name, "section")
        images = inputs.images.get(name, []) if hasattr(module, "plots") else None
        placed += [(place, section, results, images) for place, section in module.SECTIONS]
    texts = [
        section(results) if images is None else section(results, images)
        for _, section, results, images in sorted(placed, key=lambda p: p[0])
    ]
    return [text for text in texts if text]


SECTIONS: list[Section] = [
    title,
    plain_reading,
    data_checks,
    accuracy,
    attention_weights,
    ablation,
    model_variant,
    experiments,  # each experiment's sections by place
]


def markdown_report(inputs: ReportInputs, sections: list[Section] = SECTIONS) -> str:
    """The whole report.md: each section's paragraphs and tables, a blank line apart."""
    return "\n\n".join(part for section in sections for part in section(inputs)) + "\n"
