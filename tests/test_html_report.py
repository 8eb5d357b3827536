"""report.md rendered to one self-contained HTML page for MLflow's artifact view."""

from __future__ import annotations

import base64
import re

from pipeline.config import PROJECT_ROOT
from pipeline.reporting.html_report import html_report

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def test_local_images_are_embedded_and_tables_rendered(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.png").write_bytes(PNG)
    markdown = "# Title\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n![a plot](figures/a.png)\n"
    page = html_report(markdown, tmp_path)
    assert "<h1>Title</h1>" in page and "<td>1</td>" in page
    (src,) = re.findall(r'<img src="([^"]+)" alt="a plot"', page)
    assert base64.b64decode(src.removeprefix("data:image/png;base64,")) == PNG


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
