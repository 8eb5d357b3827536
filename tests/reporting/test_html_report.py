"""report.md rendered to one self-contained HTML page: reports/report.html (the report
stage's output) and MLflow's artifact view."""

from __future__ import annotations

import base64
import re

import pytest

from pipeline.config import PROJECT_ROOT
from pipeline.reporting.html_report import html_report
from tests.conftest import composed

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def test_local_images_are_embedded_and_tables_rendered(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(PNG)
    markdown = "# Title\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n![a plot](figures/a.png)\n"
    page = html_report(markdown, tmp_path)
    assert "<h1>Title</h1>" in page and "<td>1</td>" in page
    (src,) = re.findall(r'<img src="([^"]+)" alt="a plot"', page)
    assert base64.b64decode(src.removeprefix("data:image/png;base64,")) == PNG


def test_a_figure_alone_in_its_paragraph_shows_its_caption(tmp_path):
    """Issue 50, item 6: the captions were alt text only, invisible in the page."""
    markdown = "![Held-out accuracy <per run>](figures/a.png)\n\nText ![inline](b.png) text\n"
    page = html_report(markdown, tmp_path, figures={"figures/a.png": PNG})
    (figure,) = re.findall(r"<figure>(.*?)</figure>", page)
    assert figure.endswith("<figcaption>Held-out accuracy &lt;per run&gt;</figcaption>")
    assert base64.b64encode(PNG).decode() in figure  # the bytes given, not a file
    assert '<p>Text <img src="b.png" alt="inline" /> text</p>' in page


def test_the_committed_report_html_is_report_md_with_its_figures():
    """reports/report.html, written by the report stage: report.md rendered, every
    figure embedded and captioned."""
    from pipeline.reporting.report import TITLE

    reports = PROJECT_ROOT / "reports"
    markdown = (reports / "report.md").read_text()
    page = (reports / "report.html").read_text()
    assert page == html_report(markdown, reports, TITLE)
    figures = markdown.count("![")
    assert page.count("<figcaption>") == page.count('src="data:image/png;base64,') == figures


def test_a_missing_image_keeps_its_link(tmp_path):
    page = html_report("![gone](figures/gone.png)\n", tmp_path)
    assert '<img src="figures/gone.png" alt="gone"' in page


def test_the_committed_report_embeds_every_figure():
    report = PROJECT_ROOT / "reports" / "report.md"
    markdown = report.read_text()
    page = html_report(markdown, report.parent)
    assert page.count("data:image/png;base64,") == markdown.count("![") > 0
    assert page == html_report(markdown, report.parent)  # the same bytes


HOSTILE = "<img src=x onerror=alert(1)>"


def test_hostile_text_reaches_the_page_escaped(tmp_path):
    """Issue 22: raw HTML in report.md (a heading, a table cell, a caption, a figure
    name, the title) is shown as text, never passed into the page."""
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(PNG)
    markdown = (
        f"# Seeds {HOSTILE}\n\n{HOSTILE}\n\n| x {HOSTILE} |\n|---|\n| {HOSTILE} |\n\n"
        f"![caption {HOSTILE}](figures/a.png)\n\n![b](figures/{HOSTILE}.png)\n\n"
        f"<script>alert(2)</script>\n"
    )
    page = html_report(markdown, tmp_path, title=HOSTILE)
    assert "<img src=x" not in page and "<script>" not in page
    tags = parsed_tags(page)
    assert not [(tag, name) for tag, attrs in tags for name, _ in attrs if name.startswith("on")]
    assert [dict(attrs)["alt"] for tag, attrs in tags if tag == "img"] == [f"caption {HOSTILE}"]
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 6


def parsed_tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(tag, attributes) of every start tag, as a browser's parser reads them."""
    from html.parser import HTMLParser

    tags = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, attrs))

        def handle_startendtag(self, tag, attrs):
            tags.append((tag, attrs))

    Collector().feed(page)
    return tags


def test_only_pngs_under_reports_are_embedded_never_a_file_outside(tmp_path):
    """Issue 34, case 4: a cell whose variant held `![l](../../../../etc/hostname)` made
    report.html embed /etc/hostname as base64."""
    reports = tmp_path / "reports"
    (reports / "figures").mkdir(parents=True)
    png = b"\x89PNG\r\n\x1a\nfigure"
    (reports / "figures/a.png").write_bytes(png)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\nsecret")
    (reports / "figures/out.png").symlink_to(secret)  # a link out of reports/
    (reports / "up").symlink_to(tmp_path)
    (reports / "notes.txt").write_text("not a figure")
    markdown = (
        "![a](figures/a.png) ![h](../../../../etc/hostname) ![s](../secret.png) "
        "![o](figures/out.png) ![u](up/secret.png) ![t](notes.txt)"
    )
    page = html_report(markdown, reports)
    embedded = re.findall(r'src="data:[^;]+;base64,([^"]+)"', page)
    assert [base64.b64decode(e) for e in embedded] == [png]
    for kept in ("../../../../etc/hostname", "../secret.png", "figures/out.png", "notes.txt"):
        assert f'src="{kept}"' in page


def test_a_cell_file_that_holds_another_cell_is_refused(tmp_path, monkeypatch):
    """The values the report shows of a cell come from the configured cell: a file whose
    variant says `![l](../../etc/hostname)` is refused before anything renders it."""
    import json

    from pipeline.config import provenance, validate
    from pipeline.core.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    cfg = validate(composed())
    key, cell = next(iter(cfg.grid.cells.items()))
    path = provenance.cell_path(cfg.paths.grid, cell.task, cell.variant)
    path.parent.mkdir(parents=True)
    hostile = {"task": cell.task, "variant": "![l](../../../../etc/hostname)"}
    path.write_text(json.dumps({**hostile, "params": provenance.cell_params(cfg, "grid")}))
    with pytest.raises(ConfigError, match=f"does not hold the grid cell {key}"):
        provenance.cell_documents(cfg, "grid")


# The widest a table may be at a 1280 px wide window: the page's text column is 960.
WIDEST = 1000


@pytest.mark.slow
def test_every_table_fits_and_every_caption_shows_in_a_browser():
    """Issue 50, item 6: 5 of the report's 24 tables were wider than the page (1547 px
    at 1280). report.html in headless chromium at 1280 x 900: every table at most
    1000 px wide, nothing wider than the window, every figure's caption drawn. Issue
    59, item 4: as many tables as report.md has, and no paragraph of pipes (a `|` in
    a column's name split two tables' rows)."""
    from pathlib import Path

    from scripts.mlflow_ui import CHROMIUM, chromium_page
    from tests.reporting.test_tables import markdown_tables

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser at {CHROMIUM} (apt install chromium)")
    report = PROJECT_ROOT / "reports/report.html"
    with chromium_page(width=1280, height=900) as page:
        page.goto(report.as_uri())
        widths = page.eval_on_selector_all(
            "table", "tables => tables.map(t => t.getBoundingClientRect().width)"
        )
        captions = page.eval_on_selector_all(
            "figcaption", "all => all.map(c => [c.textContent, c.getBoundingClientRect().height])"
        )
        scroll = page.evaluate("document.documentElement.scrollWidth")
        piped = page.eval_on_selector_all(
            "p", "all => all.map(p => p.innerText).filter(t => t.trim().startsWith('|'))"
        )
    assert len(widths) == markdown_tables((PROJECT_ROOT / "reports/report.md").read_text())
    assert piped == [], piped[:2]
    assert len(widths) >= 24 and max(widths) <= WIDEST, sorted(widths)[-3:]
    assert scroll <= 1280
    assert len(captions) == report.read_text().count("<figcaption>") >= 17
    assert all(text and height > 0 for text, height in captions), captions
