"""The project's commands beside the DVC stages: `python -m pipeline COMMAND [ARGS]`.

`python -m pipeline` alone lists them; `python -m pipeline COMMAND --help` gives a
command's own options. The Hydra apps (`python -m pipeline.run`, `pipeline.study`)
and `python -m pipeline.params` are modules of their own.
"""

from __future__ import annotations

import importlib
import sys

# command -> the module whose `main` it runs
COMMANDS = {
    "ui": "pipeline.browse.ui",
    "history": "pipeline.browse.history",
    "compare": "pipeline.browse.compare",
    "diff": "pipeline.browse.diff",
    "share": "pipeline.sharing",
    "server": "pipeline.scaleout.server",
    "merge_study": "pipeline.scaleout.merge_study",
    "cuda-check": "pipeline.models.cuda_check",
    "check-params": "pipeline.config.pulled",
}


def usage() -> str:
    lines = ["usage: python -m pipeline COMMAND [ARGS]", "", "commands:"]
    for command, module in COMMANDS.items():
        summary = (importlib.import_module(module).__doc__ or "").splitlines()[0]
        lines.append(f"  {command:<12} {summary}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        sys.exit(0 if argv else 2)
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        sys.exit(f"error: unknown command {command!r}; allowed: {', '.join(COMMANDS)}")
    sys.argv = [f"python -m pipeline {command}", *rest]  # argparse's prog, as typed
    importlib.import_module(COMMANDS[command]).main(rest)


if __name__ == "__main__":
    main()
