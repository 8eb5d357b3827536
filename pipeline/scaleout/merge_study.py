"""Join a sharded study: `python -m pipeline merge_study SWEEP_DIR --out FILE`.

SWEEP_DIR holds the shard.pt files of `python -m pipeline.study -m
study.shard=0/n,...,n-1/n` (any launcher). FILE gets the summary.json an
unsharded run of the same seeds writes, byte for byte: shards are cut at chunk
boundaries, so every run is trained exactly as it would be unsharded, and the
bootstrap resamples the joined runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.analysis import study_shards
from pipeline.core.errors import PipelineError
from pipeline.core.files import Writes, write_json
from pipeline.reporting.summary import study_line


def os_reason(err: OSError, path: Path) -> str:
    """strerror, and the path it is about where that is not `path` (a parent folder)."""
    where = f": {err.filename}" if err.filename and Path(err.filename) != path else ""
    return f"{err.strerror or err}{where}"


OWN_HEAD = b'{\n  "seeds": '  # how a study's summary.json begins


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, help="the sweep's directory (hydra.sweep.dir)")
    parser.add_argument(
        "--out",
        action=Writes,
        is_own=lambda head: head.startswith(OWN_HEAD),
        required=True,
        help="where summary.json goes",
    )
    args = parser.parse_args(argv)  # a refused --out is said before the merge
    try:
        summary = study_shards.merged_summary(args.sweep_dir)
    except PipelineError as err:
        sys.exit(f"error: {err}")
    try:
        write_json(args.out, summary)
    except PipelineError as err:  # the writer's own line (a read-only folder, ...)
        sys.exit(f"error: {err}")
    except OSError as err:
        sys.exit(f"error: cannot write {args.out}: {os_reason(err, args.out)}")
    print(f"{study_line(summary)}; wrote {args.out}")


if __name__ == "__main__":
    main()
