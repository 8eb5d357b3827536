"""What report.md is made from, in one value that every section reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
    # each experiment's results by name as its sections read them (its section module's
    # `report_results`), None where its stage has not run
    experiments: dict[str, Any] = field(default_factory=dict)


def image_lines(images: Images) -> list[str]:
    """One paragraph per figure: report.html shows it as a figure with its caption."""
    return [f"![{caption}]({link})" for caption, link in images]
