"""A requirements lock with some of its packages left out, hashes kept.

    python scripts/lock_subset.py requirements.lock --missing > left.txt
    python scripts/lock_subset.py requirements-dev.lock --only pytest pluggy iniconfig

--missing keeps only what this python lacks at any version (a GPU image's own
numpy, pandas and torch stay; scripts/gpu_check.sh's KEEP_INSTALLED=1), and names on
stderr each package it keeps, with where it is: no hash checks a kept one; --only
keeps the named packages. Each entry is a pin line and its indented hash lines, as uv
writes them (scripts/lock.sh).
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib.metadata import PackageNotFoundError, distribution

# The standard library only: it runs in a fresh venv that has torch and nothing else
# (gpu_check.sh's KEEP_INSTALLED=1 without CUDA torch failed importing `packaging`).
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508's name


def canonicalize_name(name: str) -> str:
    """PEP 503's normalised name: runs of -, _ and . are one -, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(text: str) -> list[tuple[str, str]]:
    """(canonical name, the entry's lines) for each pinned package."""
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines(keepends=True):
        if line[:1].isalnum():
            name = NAME.match(line)[0]
            found.append((canonicalize_name(name), [line]))
        elif found and line.startswith(" ") and not line.lstrip().startswith("#"):
            found[-1][1].append(line)
    return [(name, "".join(lines)) for name, lines in found]


def installed(name: str) -> tuple[str, str] | None:
    """The installed version of a package and the folder it is in, or None."""
    try:
        found = distribution(name)
    except PackageNotFoundError:
        return None
    return found.version, str(found.locate_file(""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lock")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--missing", action="store_true")
    group.add_argument("--only", nargs="+", metavar="NAME")
    args = parser.parse_args()
    with open(args.lock) as lock:
        pinned = entries(lock.read())
    if args.only:
        wanted = {canonicalize_name(name) for name in args.only}
        sys.stdout.write("".join(entry for name, entry in pinned if name in wanted))
        return
    for name, entry in pinned:
        have, pin = installed(name), entry.split("==", 1)[1].split()[0]
        if have is None:
            sys.stdout.write(entry)
            continue
        at, where = have
        lock = f"the lock has {pin}" if at != pin else "the lock's version"
        print(
            f"keeping the machine's {name} {at} ({lock}) from {where}, not hash-checked",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
