"""Check an experiment's or a revision's params.yaml before DVC reads it.

`python -m pipeline check-params REV` (an experiment's name, as `dvc exp show` lists
it, or any git revision). DVC expands params.yaml with ruamel.yaml in `dvc status`,
`repro`, `params diff` and `exp show`, before any stage of ours runs, so a pulled
experiment whose params.yaml holds an alias bomb hangs them; `dvc install`'s git
hooks run DVC itself, and `dvc exp pull` and `dvc exp apply` run no hook of ours.
This reads the file from git without expanding an alias and refuses what
`load_params` refuses (docs/sharing.md: run it after `dvc exp pull`, before
`dvc exp apply`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from pipeline.config.load import PARAMS_FILE, load_params
from pipeline.core.errors import ConfigError

MAX_BYTES = 1 << 20  # params.yaml is ~6 kB; a larger one is refused unread


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, check=False)


def revision(name: str) -> str:
    """An experiment's ref (refs/exps/.../NAME) where one is named so, else `name`."""
    refs = _git("for-each-ref", "--format=%(refname)", "refs/exps").stdout.decode().split()
    matches = [ref for ref in refs if ref.rsplit("/", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else name


def params_at(name: str) -> tuple[str, bytes]:
    """(where, bytes) of params.yaml at experiment or revision `name`, size-checked first."""
    rev = revision(name)
    where = f"{rev}:{PARAMS_FILE}"
    size = _git("cat-file", "-s", where)
    if size.returncode != 0:
        raise ConfigError(
            f"no {PARAMS_FILE} at {name!r}: name an experiment (`dvc exp show`) or a git "
            "revision that has one"
        )
    if int(size.stdout) > MAX_BYTES:
        raise ConfigError(
            f"{where} is {int(size.stdout)} bytes; params.yaml takes at most {MAX_BYTES}"
        )
    return where, _git("cat-file", "blob", where).stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="an experiment's name or a git revision")
    args = parser.parse_args(argv)
    try:
        where, data = params_at(args.rev)
        load_params(Path(where), data)
    except ConfigError as err:
        sys.exit(f"error: {err}")
    print(f"{where}: no alias, one reading for every key, every value in range")


if __name__ == "__main__":
    main()
