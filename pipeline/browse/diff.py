"""What a change did to every param and metric: `python -m pipeline diff [REV]`.

Between REV (default HEAD) and the workspace, in this order: the params that
changed, the headline metrics (old -> new), every other metric that changed, then
`dvc params diff` and `dvc metrics diff` in full (Markdown). The same diff CI
prints, for a developer before they push. `--out FILE` also keeps it as a file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.files import command_output, write_text

# Every numbers file: reports/headline.json is the only one dvc.yaml declares as
# metrics (so that `dvc metrics show` stays readable); the rest are compared as
# targets, in full.
HEADLINE = "reports/headline.json"
NUMBERS = [
    HEADLINE,
    "reports/metrics.json",
    "reports/study/summary.json",
    "reports/faithfulness.json",
    "reports/study/faithfulness.json",
]


def dvc(*args: str) -> str:
    result = subprocess.run(["dvc", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: dvc {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def number(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def change_lines(changes: dict, shown=number) -> list[str]:
    """`- file key: old -> new` for each entry of `dvc ... diff --json`."""
    return [
        f"- {name} `{key}`: {shown(values.get('old'))} -> {shown(values.get('new'))}"
        for name, keys in changes.items()
        for key, values in sorted(keys.items())
    ]


def report(rev: str) -> str:
    params = json.loads(dvc("params", "diff", rev, "--json") or "{}")
    targets = ["--targets", *NUMBERS]
    changed = json.loads(dvc("metrics", "diff", rev, "--json", *targets) or "{}")
    everything = json.loads(
        dvc("metrics", "diff", rev, "--json", "--all", "--targets", HEADLINE) or "{}"
    )
    others = {name: keys for name, keys in changed.items() if name != HEADLINE}
    sections = [
        (f"{OWN_HEAD.decode()}{rev} -> workspace", change_lines(params, json.dumps) or ["(none)"]),
        (f"## Headline metrics ({HEADLINE})", change_lines(everything) or ["(none)"]),
        ("## Other metrics that changed", change_lines(others) or ["(none)"]),
        ("## Every param", [dvc("params", "diff", rev, "--md", "--all") or "(none)"]),
        ("## Every metric", [dvc("metrics", "diff", rev, "--md", "--all", *targets) or "(none)"]),
    ]
    return "\n\n".join(f"{title}\n\n" + "\n".join(lines) for title, lines in sections) + "\n"


OWN_HEAD = b"## Params changed: "  # how its --out file begins


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="git revision to compare with")
    parser.add_argument("--out", type=Path, help="also write the diff to this file")
    args = parser.parse_args(argv)
    if args.out:
        try:  # before the diff is computed: a refused file costs nothing
            command_output(args.out, "--out", lambda head: head.startswith(OWN_HEAD))
        except PipelineError as err:
            sys.exit(f"error: {err}")
    text = report(args.rev)
    print(text)
    if args.out:
        write_text(args.out, text)


if __name__ == "__main__":
    main()
