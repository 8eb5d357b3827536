"""What a change did to every param and metric: `python -m pipeline diff [REV]`.

Between REV (default HEAD) and the workspace, on one screen: the params that
changed, the headline metrics as one table (old, new, change), and one line per
numbers file saying how many of its values changed and by at most how much.
`--all` adds every other metric that changed, then `dvc params diff` and `dvc
metrics diff` in full (Markdown): what CI prints. `--out FILE` also keeps it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from pipeline.core.files import Writes, write_text

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


def signed(value) -> str:
    return "-" if value is None else f"{value:+.4f}" if isinstance(value, float) else f"{value:+d}"


def headline_table(changes: dict, rev: str) -> list[str]:
    """Every headline metric as one row: old, new and change (Markdown)."""
    rows = [f"| metric | {rev} | workspace | change |", "|---|---:|---:|---:|"]
    for key, values in sorted(changes.items()):
        old, new = values.get("old"), values.get("new")
        change = values.get("diff")
        if change is None and isinstance(old, (int, float)) and isinstance(new, (int, float)):
            change = new - old
        rows.append(f"| {key} | {number(old)} | {number(new)} | {signed(change)} |")
    return rows


def file_lines(everything: dict) -> list[str]:
    """Per numbers file: how many of its values changed, and by at most how much."""
    lines = []
    for name in NUMBERS:
        keys = everything.get(name, {})
        changed = [v for v in keys.values() if v.get("old") != v.get("new")]
        sizes = [
            abs(v["new"] - v["old"])
            for v in changed
            if isinstance(v.get("old"), (int, float)) and isinstance(v.get("new"), (int, float))
        ]
        most = f", by at most {max(sizes):.4g}" if sizes else ""
        lines.append(f"- {name}: {len(changed)} of {len(keys)} values changed{most}")
    return lines


def report(rev: str, full: bool = False) -> str:
    """What changed against `rev`: the params, the headline metrics as one table, one
    line per numbers file; `full` adds every changed metric and DVC's full tables."""
    params = json.loads(dvc("params", "diff", rev, "--json") or "{}")
    targets = ["--targets", *NUMBERS]
    everything = json.loads(dvc("metrics", "diff", rev, "--json", "--all", *targets) or "{}")
    headline = everything.get(HEADLINE, {})
    sections = [
        (f"{OWN_HEAD.decode()}{rev} -> workspace", change_lines(params, json.dumps) or ["(none)"]),
        (
            f"## Headline metrics ({HEADLINE})",
            headline_table(headline, rev) if headline else ["(none)"],
        ),
        ("## Every numbers file", file_lines(everything)),
    ]
    if full:
        changed = {
            name: {key: v for key, v in keys.items() if v.get("old") != v.get("new")}
            for name, keys in everything.items()
            if name != HEADLINE
        }
        others = {name: keys for name, keys in changed.items() if keys}
        sections += [
            ("## Other metrics that changed", change_lines(others) or ["(none)"]),
            ("## Every param", [dvc("params", "diff", rev, "--md", "--all") or "(none)"]),
            (
                "## Every metric",
                [dvc("metrics", "diff", rev, "--md", "--all", *targets) or "(none)"],
            ),
        ]
    return "\n\n".join(f"{title}\n\n" + "\n".join(lines) for title, lines in sections) + "\n"


OWN_HEAD = b"## Params changed: "  # how its --out file begins


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="git revision to compare with")
    parser.add_argument(
        "--out",
        action=Writes,
        is_own=lambda head: head.startswith(OWN_HEAD),
        help="also write the diff to this file",
    )
    parser.add_argument(
        "--all", action="store_true", help="also every changed metric and DVC's full tables"
    )
    args = parser.parse_args(argv)  # a refused --out costs nothing: said before the diff
    text = report(args.rev, args.all)
    print(text)
    if args.out:
        write_text(args.out, text)


if __name__ == "__main__":
    main()
