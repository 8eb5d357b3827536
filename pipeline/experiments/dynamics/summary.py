"""The dynamics' line in `dvc repro`'s closing summary."""

from __future__ import annotations


def dynamics_line(document: dict) -> str:
    """When the seeds find the marked step, and how many never do."""
    found = document["emergence"]
    median = found.get("median")
    when = "none finds it" if median is None else f"median epoch {median:g}"
    return (
        f"{document['seeds']} seeds over training: hit@1 settles at or above "
        f"{document['found']:g} at {when}; {found['share_never']:.1%} never"
    )


def lines(cfg, document: dict | None) -> list[str]:
    if document is None:
        return []
    return [
        f"== the mechanism over training: {cfg.paths.report}, section 'The mechanism over "
        "training'",
        dynamics_line(document),
    ]
