"""What report.md is made from, in one value that every section reads."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from pipeline.config import Config

Images = list[tuple[str, str]]  # (caption, link relative to report.md)


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report's sections read. A section takes what it needs and
    writes nothing when its part is missing (None, no cells); a new section that
    needs a new input adds a field here with a default."""

    cfg: Config
    document: dict  # metrics.json
    steps: pd.DataFrame  # the step table
    golden: bool  # the lesson's configuration: the lesson's value beside each number
    images: dict[str, Images] = field(default_factory=dict)  # by section: accuracy, weights, ...
    study: tuple[dict, pd.DataFrame] | None = None  # the seed study's summary and table
    faithfulness: tuple[dict, dict] | None = None  # faithfulness.json, its study summary
    # each experiment's results by name, None where its stage has not run
    experiments: dict[str, dict | None] = field(default_factory=dict)


def image_lines(images: Images) -> list[str]:
    """One paragraph per figure: report.html shows it as a figure with its caption."""
    return [f"![{caption}]({link})" for caption, link in images]
