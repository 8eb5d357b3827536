"""What a change did to every param and metric: `python -m pipeline.diff [REV]`.

Prints `dvc params diff` and `dvc metrics diff` (Markdown) between REV
(default HEAD) and the workspace; the same diff CI prints, for a developer
before they push. `--out FILE` also keeps it as a file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from pipeline.files import write_text


def dvc_diff(kind: str, rev: str) -> str:
    result = subprocess.run(
        ["dvc", kind, "diff", rev, "--md", "--all"], capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"error: dvc {kind} diff {rev} failed: {result.stderr.strip()}")
    return result.stdout.strip() or f"(no {kind} changed)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="git revision to compare with")
    parser.add_argument("--out", type=Path, help="also write the diff to this file")
    args = parser.parse_args(argv)
    text = (
        f"## Params: {args.rev} -> workspace\n\n{dvc_diff('params', args.rev)}\n\n"
        f"## Metrics: {args.rev} -> workspace\n\n{dvc_diff('metrics', args.rev)}\n"
    )
    print(text)
    if args.out:
        write_text(args.out, text)


if __name__ == "__main__":
    main()
