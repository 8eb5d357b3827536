"""report.md as one self-contained HTML page, its figures embedded.

The report stage writes it as reports/report.html (paths.report_html), what a
reader opens in a browser; MLflow's artifact view previews HTML but shows the
images of a Markdown file as link text, so the track stage logs it too. A figure
alone in its paragraph becomes a <figure> whose <figcaption> shows its caption.
"""

from __future__ import annotations

import base64
import html
import mimetypes
from pathlib import Path

from pipeline.core.files import first_link

STYLE = """
body { font-family: sans-serif; max-width: 60rem; margin: 1rem auto; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
img { max-width: 100%; }
figure { margin: 1rem 0; }
figcaption { font-style: italic; color: #444; }
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


def embed_images(tokens: list, base: Path, figures: dict[str, bytes] | None = None) -> None:
    """Replace each figure link (relative to `base`, `embeddable`) by a data: URI, in
    place; a link among `figures` takes those bytes (a stage's figures not yet
    published)."""
    figures = figures or {}
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            src = str(child.attrGet("src"))
            if src in figures:
                payload, name = figures[src], src
            elif (path := embeddable(base, src)) is not None:
                payload, name = path.read_bytes(), path.name
            else:
                continue
            mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
            encoded = base64.b64encode(payload).decode("ascii")
            child.attrSet("src", f"data:{mime};base64,{encoded}")


def caption_figures(tokens: list) -> None:
    """A paragraph that holds one image and nothing else becomes a <figure>, the
    image's alt text shown below it as the <figcaption>, escaped; in place."""
    from markdown_it.token import Token

    for opening, inline, closing in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if opening.type != "paragraph_open" or closing.type != "paragraph_close":
            continue
        children = [c for c in inline.children or [] if c.type != "softbreak"]
        if len(children) != 1 or children[0].type != "image":
            continue
        opening.tag = closing.tag = "figure"
        caption = html.escape(children[0].content)
        inline.children = [
            children[0],
            Token("html_inline", "", 0, content=f"<figcaption>{caption}</figcaption>"),
        ]


def html_report(
    markdown: str, base: Path, title: str = "report", figures: dict[str, bytes] | None = None
) -> str:
    """The whole page: `markdown` rendered (CommonMark and tables) with the images it
    links, relative to `base`, embedded; `figures`: PNG bytes by link, for the links
    whose files are not written yet."""
    from markdown_it import MarkdownIt

    # No raw HTML: a `<tag>` in report.md (from a config value, a caption, a cell)
    # is shown as text, not passed into the page; the renderer escapes all text,
    # link targets and alt text, and caption_figures escapes the captions it adds.
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(markdown)
    embed_images(tokens, base, figures)
    caption_figures(tokens)
    body = parser.renderer.render(tokens, parser.options, {})
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}</body></html>\n"
    )
