"""What a change did to every param and metric: `python -m pipeline.diff [REV]`.

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

from pipeline.files import write_text

# (file, dotted key, what it is): the numbers the lesson and the study are about.
HEADLINE = [
    ("reports/metrics.json", "seed_gap", "run-to-run gap in held-out accuracy"),
    ("reports/metrics.json", "runs.1.heldout_accuracy", "run 1 held-out accuracy"),
    ("reports/metrics.json", "runs.2.heldout_accuracy", "run 2 held-out accuracy"),
    ("reports/metrics.json", "runs.1.marker_mass", "run 1 marker mass"),
    ("reports/metrics.json", "runs.2.marker_mass", "run 2 marker mass"),
    ("reports/study/summary.json", "heldout_accuracy.mean", "study: mean held-out accuracy"),
    (
        "reports/study/summary.json",
        "pair_gap.p_at_least_observed",
        "study: share of seed pairs at least the gap apart",
    ),
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
        for key, values in keys.items()
    ]


def headline_lines(everything: dict) -> list[str]:
    lines = []
    for name, key, meaning in HEADLINE:
        values = everything.get(name, {}).get(key)
        if values is not None:
            old, new = number(values.get("old")), number(values.get("new"))
            lines.append(f"- {meaning} (`{key}`): {old} -> {new}")
    return lines


def report(rev: str) -> str:
    params = json.loads(dvc("params", "diff", rev, "--json") or "{}")
    changed = json.loads(dvc("metrics", "diff", rev, "--json") or "{}")
    everything = json.loads(dvc("metrics", "diff", rev, "--json", "--all") or "{}")
    headline_keys = {(name, key) for name, key, _ in HEADLINE}
    others = {
        name: {k: v for k, v in keys.items() if (name, k) not in headline_keys}
        for name, keys in changed.items()
    }
    sections = [
        (f"## Params changed: {rev} -> workspace", change_lines(params, json.dumps) or ["(none)"]),
        ("## Headline metrics", headline_lines(everything) or ["(none)"]),
        ("## Other metrics that changed", change_lines(others) or ["(none)"]),
        ("## Every param", [dvc("params", "diff", rev, "--md", "--all") or "(none)"]),
        ("## Every metric", [dvc("metrics", "diff", rev, "--md", "--all") or "(none)"]),
    ]
    return "\n\n".join(f"{title}\n\n" + "\n".join(lines) for title, lines in sections) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="git revision to compare with")
    parser.add_argument("--out", type=Path, help="also write the diff to this file")
    args = parser.parse_args(argv)
    text = report(args.rev)
    print(text)
    if args.out:
        write_text(args.out, text)


if __name__ == "__main__":
    main()
