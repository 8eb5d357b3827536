"""What report.md reads of the debate: every cell's file the config lists (checked
against the params it was made from) and the debate_figures stage's figures."""

from __future__ import annotations

from pipeline.config import provenance
from pipeline.config.schema import Config


def read(cfg: Config) -> dict | None:
    """{"cells": each cell's document, "images": the figures as report.md links them};
    None where the config lists no cell or none has run (`provenance.cell_results`)."""
    return provenance.cell_results(cfg, "debate", cfg.paths.debate_figures)
