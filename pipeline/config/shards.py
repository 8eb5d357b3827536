"""A study's shards: study.shard as (i, n), the seeds cut at chunk boundaries. The
seed study's machinery (pipeline/analysis/seed_study.py) and its config check read
it; it imports nothing of the schema, so an experiment's config module may."""

from __future__ import annotations

import re
from typing import Any

from pipeline.config.intervals import check

SHARD = re.compile(r"(\d+)/(\d+)")


def shard_of(study: Any) -> tuple[int, int] | None:
    """study.shard as (i, n), None for the whole study (`study`: the study group's
    settings). The seeds are cut at chunk boundaries, so a shard trains exactly the
    chunks an unsharded run would."""
    if study.shard is None:
        return None
    match = SHARD.fullmatch(str(study.shard))
    chunks = -(-study.seeds // study.chunk)
    allowed = f"must be i/n with 0 <= i < n <= {chunks} (the study's chunks), or null"
    check(match is not None, "study.shard", allowed, study.shard)
    index, count = int(match[1]), int(match[2])
    check(0 <= index < count <= chunks, "study.shard", allowed, study.shard)
    return index, count
