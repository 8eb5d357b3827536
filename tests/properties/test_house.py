"""The house's size limits (issue 50, item 9): a module reads in one sitting, the
README is a front door (depth lives in docs/)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES = 400
README_LINES = 150


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize(
    "module", sorted(ROOT.glob("pipeline/**/*.py")), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_no_module_is_over_400_lines(module):
    assert line_count(module) <= MODULE_LINES, f"{module.name}: split it by idea"


def test_the_readme_fits_in_150_lines():
    assert line_count(ROOT / "README.md") <= README_LINES


def test_the_limits_count_lines(tmp_path):
    # a file of 3 lines, the last without a newline, is 3 lines
    sample = tmp_path / "sample.py"
    sample.write_text("a\nb\nc")
    assert line_count(sample) == 3
