"""The checks of `paths.*`: every output stays inside the project's output folders,
on a path of its own, through no symbolic link, and names a file where it is one.

DVC writes, deletes and records these paths, so a path elsewhere would let a run
replace or delete someone else's file, or a source, config or store file.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path, PurePosixPath

from pipeline.config.bounds import check
from pipeline.config.schema import (
    DVC_FILES,
    OUTPUT_DIRS,
    OUTPUTS_NAMED,
    PATH_CHARS,
    TRACKED_STATE,
    Config,
)
from pipeline.core.kinds import EXPERIMENTS, experiment_part

NAME_MAX, PATH_MAX = 255, 1024  # Linux's limit on a file name; a path far below its own
# paths.* that are folders
FOLDER_KEYS = (
    "figures", "provenance",
    *(key for name in EXPERIMENTS for key in experiment_part(name, "config").FOLDERS),
)  # fmt: skip


def check_paths(cfg: Config) -> None:
    """Each of `paths.*` on its own, then all of them against each other."""
    for item in fields(cfg.paths):
        key, value = f"paths.{item.name}", getattr(cfg.paths, item.name)
        _check_path(key, value)
        _check_no_link(key, value)
        _check_not_a_folder(key, value)
    _check_distinct_paths(cfg)


def _check_path(key: str, value: str) -> None:
    """A pipeline file must stay inside the project: DVC writes, deletes and
    records it, so an absolute path or a `..` would reach someone else's file.
    Inside, it must be an output (`OUTPUT_DIRS`), not a project file."""
    path = PurePosixPath(value)
    inside = bool(path.parts) and not (
        path.is_absolute() or value.startswith("~") or ".." in path.parts
    )
    check(
        inside,
        key,
        "must be a relative path inside the project (no absolute path, no '..', not empty)",
        value,
    )
    check(
        PATH_CHARS.fullmatch(value) is not None,
        key,
        "may use only the characters A-Z a-z 0-9 . _ - /",
        value,
    )
    parts = path.parts
    check(
        all(len(part.encode()) <= NAME_MAX for part in parts) and len(value) <= PATH_MAX,
        key,
        f"each part of the path must be at most {NAME_MAX} bytes, the path {PATH_MAX}",
        value if len(value) <= 60 else value[:60] + "...",
    )
    output = (
        len(parts) >= 2
        and parts[0] in OUTPUT_DIRS
        and not any(DVC_FILES.fullmatch(part) for part in parts)
    )
    allowed = f"must be under {OUTPUTS_NAMED}"
    if key == "paths.tracked_state":
        output = output or (len(parts) == 1 and TRACKED_STATE.fullmatch(parts[0]) is not None)
        allowed += ", or be a .mlflow-state*.json file in the project root"  # its default
    check(
        output,
        key,
        f"{allowed} (outputs only, no hidden or DVC file: never a source, config or store file)",
        value,
    )


def _check_no_link(key: str, value: str) -> None:
    """A link anywhere on an output's path would let a write land outside the project or
    on a source (`ln -s .. reports/up`; git commits links, so a clone can carry one)."""
    from pipeline.core.files import first_link

    link = first_link(value)
    check(
        link is None,
        key,
        f"must not pass through a symbolic link ({link and link.as_posix()} is one): "
        "outputs are written only to real folders inside the project",
        value,
    )


def _overlap(path: PurePosixPath, other: PurePosixPath) -> str | None:
    if path == other:
        return "is also"
    if other in path.parents:
        return "is inside"
    return "holds" if path in other.parents else None


def _check_distinct_paths(cfg: Config) -> None:
    """Every output its own path: two on one path, or one inside another's folder
    (`paths.metrics=reports/training.csv`, `paths.figures=reports/grid`), would let one
    stage's write replace another's output."""
    seen: list[tuple[str, PurePosixPath]] = []
    for item in fields(cfg.paths):
        key, path = f"paths.{item.name}", PurePosixPath(getattr(cfg.paths, item.name))
        for other, other_path in seen:
            overlap = _overlap(path, other_path)
            check(
                overlap is None,
                key,
                f"{overlap} {other}={other_path.as_posix()!r}: every output needs a path of "
                "its own, not another's and not inside another's folder",
                path.as_posix(),
            )
        seen.append((key, path))


def _check_not_a_folder(key: str, value: str) -> None:
    check(
        key.removeprefix("paths.") in FOLDER_KEYS or not Path(value).is_dir(),
        key,
        "is a folder; name a file (an output file of this name cannot replace it)",
        value,
    )


def from_report(cfg: Config, directory: str | Path) -> str:
    """`directory` as report.md links to it: relative to report.md's folder."""
    return Path(os.path.relpath(directory, Path(cfg.paths.report).parent)).as_posix()


def folder_images(cfg: Config, folder: str) -> list[str]:
    """The PNGs of a stage's figure folder, as report.md links them, by name."""
    prefix = from_report(cfg, folder)
    return [f"{prefix}/{png.name}" for png in sorted(Path(folder).glob("*.png"))]
