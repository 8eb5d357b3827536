"""The one Markdown table writer of the report: pandas' `to_markdown` with `|`
escaped in headers, index labels and cells.

A `|` inside a cell ends the cell in GitHub's and markdown-it's tables, so a column
named `top-|R| holds R` splits the header row, which then does not match the
delimiter row, and the whole table renders as a paragraph of pipes. `\\|` is a
literal pipe in a table cell (GFM, markdown-it); a table without a `|` in its text
keeps its bytes.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def escaped(value: Any) -> Any:
    """A text with its pipes escaped for a table cell; anything else as it is."""
    return value.replace("|", "\\|") if isinstance(value, str) else value


def markdown(frame: pd.DataFrame, **options: Any) -> str:
    """`frame.to_markdown(**options)` with every `|` in its text escaped."""
    shown = frame.rename(columns=escaped, index=escaped)
    shown.columns.names = [escaped(name) for name in shown.columns.names]
    shown.index.names = [escaped(name) for name in shown.index.names]
    for column in shown.columns:
        # Text (str or object columns); numbers keep their dtype, so their format.
        if shown[column].dtype == object or pd.api.types.is_string_dtype(shown[column]):
            shown[column] = shown[column].map(escaped)
    return shown.to_markdown(**options)
