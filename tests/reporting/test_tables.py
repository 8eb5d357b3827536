"""The report's table writer (pipeline/reporting/tables.py): a `|` in a header or a
cell stays in its cell, and every table of report.md is a table in report.html."""

from __future__ import annotations

import re

import pandas as pd

from pipeline.config import PROJECT_ROOT
from pipeline.experiments.erasure.section import disagreement_table, rationale_table
from pipeline.reporting import tables
from pipeline.reporting.html_report import html_report

# A Markdown table's delimiter row: one per table.
DELIMITER = re.compile(r"^\|(?: *:?-+:? *\|)+$", re.MULTILINE)


def markdown_tables(markdown: str) -> int:
    return len(DELIMITER.findall(markdown))


def test_a_pipe_in_a_header_or_a_cell_stays_in_its_cell(tmp_path):
    frame = pd.DataFrame({"top-|R| holds R": ["a | b", "c"], "n": [1.5, 2.0]})
    markdown = tables.markdown(frame, index=False)
    page = html_report(markdown, tmp_path)
    assert page.count("<table>") == markdown_tables(markdown) == 1
    assert ">top-|R| holds R</th>" in page and ">a | b</td>" in page
    assert ">1.5</td>" in page  # numbers as to_markdown writes them


def test_a_table_without_a_pipe_keeps_its_bytes():
    frame = pd.DataFrame({"explainer": ["attention", "gradient"], "score": [0.5, 0.25]})
    frame = frame.set_index("explainer")
    options = {"stralign": "right", "disable_numparse": True}
    assert tables.markdown(frame, **options) == frame.to_markdown(**options)


def test_the_erasure_tables_with_pipes_in_their_names_render(tmp_path):
    """Issue 59, item 4: "Agreement with the true rationale R" and "Does disagreement
    predict that both explainers are wrong?" rendered as paragraphs of pipes."""
    interval = {"mean": 0.5, "ci95_low": 0.4, "ci95_high": 0.6}
    pairs = {k: interval for k in ("r_pairwise_rank_both_wrong", "both_wrong_top1_agree")}
    pairs["both_wrong_top1_differ"] = interval
    document = {
        "runs": {"1": {"disagreement": {"pairs": {k: 0.5 for k in pairs}}}},
        "study": {
            "rationale": {
                "attention": {m: interval for m in ("feature", "spearman", "pairwise_rank")}
            },
            "disagreement": {"pairs": pairs},
        },
    }
    for table in (rationale_table(document), disagreement_table(document)):
        markdown = tables.markdown(table, index=False)
        page = html_report(markdown, tmp_path)
        assert page.count("<table>") == 1 and "<p>|" not in page, markdown


def test_every_table_of_the_committed_report_is_a_table_in_its_page():
    """report.md's tables, counted by their delimiter rows, are report.html's tables,
    and no row of one is left as a paragraph of pipes."""
    reports = PROJECT_ROOT / "reports"
    markdown = (reports / "report.md").read_text()
    page = (reports / "report.html").read_text()
    assert page.count("<table>") == markdown_tables(markdown) >= 24
    assert not re.search(r"<p>\s*\|", page)
