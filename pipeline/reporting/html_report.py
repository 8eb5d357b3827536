"""report.md as one self-contained HTML page, its figures embedded.

MLflow's artifact view previews HTML but shows the images of a Markdown file as
link text, so the track stage logs this rendering beside report.md.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from pathlib import Path

from pipeline.files import first_link

STYLE = """
body { font-family: sans-serif; max-width: 60rem; margin: 1rem auto; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
img { max-width: 100%; }
code, pre { background: #f4f4f4; }
"""


EMBEDDED = frozenset({".png"})  # what the pipeline's stages draw


def embeddable(base: Path, src: str) -> Path | None:
    """The figure `src` names, if it is one the pipeline could have written: a PNG
    under `base` (reports/) by its resolved path, reached through no link. Anything
    else (`../../etc/hostname`, a link out of reports/) stays a plain link, never read."""
    root, path = base.resolve(), base / src
    try:
        relative = path.resolve().relative_to(root)
    except (ValueError, OSError):
        return None
    if path.suffix.lower() not in EMBEDDED or first_link(src, base) is not None:
        return None
    return root / relative if (root / relative).is_file() else None


def embed_images(tokens: list, base: Path) -> None:
    """Replace each figure link (relative to `base`, `embeddable`) by a data: URI, in
    place."""
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            path = embeddable(base, str(child.attrGet("src")))
            if path is None:
                continue
            mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            payload = base64.b64encode(path.read_bytes()).decode("ascii")
            child.attrSet("src", f"data:{mime};base64,{payload}")


def html_report(markdown: str, base: Path, title: str = "report") -> str:
    """The whole page: `markdown` rendered (CommonMark and tables) with the images it
    links, relative to `base`, embedded."""
    from markdown_it import MarkdownIt

    # No raw HTML: a `<tag>` in report.md (from a config value, a caption, a cell)
    # is shown as text, not passed into the page; the renderer escapes all text,
    # link targets and alt text.
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(markdown)
    embed_images(tokens, base)
    body = parser.renderer.render(tokens, parser.options, {})
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}</body></html>\n"
    )
