"""report.md rendered to one self-contained HTML page for MLflow's artifact view."""

from __future__ import annotations

import base64
import re

from pipeline.config import PROJECT_ROOT
from pipeline.html_report import html_report

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
