"""Provenance: which params made each stage's outputs, checked by every later stage.

Each stage ends by writing a record, `<paths.provenance>/<stage>.json`, beside its
outputs (a DVC out itself): the values of the params it lists in dvc.yaml, as
it read them, and the sha256 of every output file. A stage that reads another
stage's outputs first checks that stage's record against the params.yaml it
reads and against the bytes on disk. So outputs made from other params (a
`dvc exp run -S` that rewrites params.yaml during a `dvc repro`), half-published by a
killed run, or edited by hand are refused with one line, never built upon.

Plain YAML, JSON and hashlib only: the track stage runs this each time it runs,
and its no-op path stays light.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from pipeline.config import PARAMS_FILE, PROJECT_ROOT, Config, to_container
from pipeline.config.outputs import FOLDER_KEYS, folder_images
from pipeline.core import numerics
from pipeline.core.errors import ConfigError
from pipeline.core.files import all_or_none, read_json, require, write_json

PIPELINE_FILE = "dvc.yaml"


@functools.cache
def stages(root: Path = PROJECT_ROOT) -> dict[str, dict]:
    """dvc.yaml's stages, parsed once per process (the track stage's no-op path)."""
    return yaml.safe_load((root / PIPELINE_FILE).read_text())["stages"]


def resolve(entry: str | dict, cfg: Config) -> str:
    """A dvc.yaml deps/outs entry with its ${paths.*} filled in from the config."""
    path = next(iter(entry)) if isinstance(entry, dict) else entry
    for key, value in to_container(cfg)["paths"].items():
        path = path.replace(f"${{paths.{key}}}", value)
    return path


def stage_params(cfg: Config, stage: str, root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The params a stage lists in dvc.yaml, flattened to dotted keys."""
    return listed_params(cfg, stages(root)[stage].get("params", []))


def listed_params(cfg: Config, names: list[str]) -> dict[str, Any]:
    """The values of dvc.yaml params entries (`data`, `train.lr`), flattened."""
    tree = to_container(cfg)
    values: dict[str, Any] = {}
    for name in names:
        node: Any = tree
        for part in name.split("."):
            node = node[part]
        values.update(flatten(node, name))
    return values


def flatten(node: Any, prefix: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(flatten(value, f"{prefix}.{key}"))
    return flat


def output_files(cfg: Config, stage: str, root: Path = PROJECT_ROOT) -> list[str]:
    """Every file a stage writes (directories expanded), its own record excluded."""
    spec = stages(root)[stage]
    entries = [*spec.get("outs", []), *spec.get("metrics", []), *spec.get("plots", [])]
    files: list[str] = []
    for entry in entries:
        path = Path(resolve(entry, cfg))
        if path == record_path(cfg, stage):
            continue
        if path.is_dir():
            files += sorted(p.as_posix() for p in path.rglob("*") if p.is_file())
        elif not is_folder(entry):  # a folder not made yet holds no file
            files.append(path.as_posix())
    return files


def is_folder(entry: str | dict) -> bool:
    """A dvc.yaml entry that is a whole ${paths.*} folder (checks.FOLDER_KEYS)."""
    path = next(iter(entry)) if isinstance(entry, dict) else entry
    return any(path == f"${{paths.{key}}}" for key in FOLDER_KEYS)


def record_path(cfg: Config, stage: str) -> Path:
    return Path(cfg.paths.provenance) / f"{stage}.json"


def sha256(path: str | Path) -> str:
    return hashlib.sha256(require(Path(path)).read_bytes()).hexdigest()


def changed_keys(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """`key old→new` for every recorded key whose value differs now."""
    return [
        f"{key} {json.dumps(old)}→{json.dumps(current.get(key))}"
        for key, old in recorded.items()
        if current.get(key) != old
    ]


def check_params_unchanged(cfg: Config, stage: str, now: Config | None = None) -> None:
    """Refuse to publish when params.yaml (or `now`, read from it) changed under a
    running stage (e.g. a concurrent `dvc exp run -S`): DVC would record the new
    values in dvc.lock."""
    from pipeline.config import load_params

    now = now or load_params(Path.cwd() / PARAMS_FILE)
    changes = changed_keys(stage_params(cfg, stage), stage_params(now, stage))
    if changes:
        raise ConfigError(
            f"params.yaml changed while the {stage} stage ran ({'; '.join(changes)}): "
            "not publishing outputs made from the old values; rerun `dvc repro`"
        )
    check_experiment_params(cfg, stage)


# Under `dvc exp run` in the workspace, DVC points this ref at the experiment's stash
# commit (its -S changes applied to params.yaml) and names the experiment in
# $DVC_EXP_NAME and in that commit's message (`dvc-exp:REV:BASELINE:NAME`).
EXPERIMENT_REF = "refs/exps/exec/EXEC_MERGE"
EXPERIMENT_MESSAGE = re.compile(r"dvc-exp:[0-9a-f]+:[0-9a-f]+:(?P<name>[^:\n]*)")


def check_experiment_params(cfg: Config, stage: str) -> None:
    """Under `dvc exp run`, refuse to publish unless the workspace still runs this
    experiment with its own params: a second `dvc exp run` started meanwhile is
    refused as busy by DVC only after its `-S` rewrote params.yaml and its stash took
    DVC's ref, and the first would otherwise run and log the second's change under
    its own name. Outside an experiment, or where git or the ref is missing, there
    is nothing to compare with."""
    name = os.environ.get("DVC_EXP_NAME")
    if not name:
        return
    root = str(Path.cwd())
    if Path(os.environ.get("DVC_ROOT") or root).resolve() != Path(root).resolve():
        return  # a queued run, in a copy of its own (DVC_ROOT names the parent): no
        # other `dvc exp run` shares its folder

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", root, *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    if git("rev-parse", "--git-dir") is None:
        return  # no git here to ask
    message = git("log", "-1", "--format=%B", EXPERIMENT_REF)
    if message is None:  # DVC keeps it while an experiment runs; a refused one removes it
        raise ConfigError(
            f"DVC's record of experiment {name} ({EXPERIMENT_REF}) is gone while its {stage} "
            "stage ran: another `dvc exp run` started in this workspace and may have "
            "rewritten params.yaml; not publishing (run one experiment at a time in a "
            "workspace, or `dvc exp run --queue`)"
        )
    found = EXPERIMENT_MESSAGE.search(message)
    if found and found["name"] != name:
        raise ConfigError(
            f"another `dvc exp run` ({found['name']}) took the workspace while experiment "
            f"{name} ran its {stage} stage: its params are not {name}'s; not publishing "
            "(run one experiment at a time in a workspace, or queue them: `dvc exp run --queue`)"
        )
    text = git("show", f"{EXPERIMENT_REF}:{PARAMS_FILE}")
    if text is None:
        return
    from pipeline.config import load_params

    # Read from git's bytes, nothing written: Path only names it in a message.
    intended = load_params(Path(root) / f"{EXPERIMENT_REF}:{PARAMS_FILE}", text.encode())
    changes = changed_keys(stage_params(intended, stage), stage_params(cfg, stage))
    if changes:
        raise ConfigError(
            f"params.yaml is not experiment {name}'s ({'; '.join(changes)}): another "
            f"`dvc exp run` rewrote it while {name} ran; the {stage} stage publishes "
            "nothing (run one experiment at a time in a workspace, or `dvc exp run --queue`)"
        )


@contextmanager
def publishing(cfg: Config, stage: str) -> Iterator[None]:
    """Around a stage's writes: params.yaml is checked before and after them; the
    outputs are published all together or not at all, then the record."""
    check_params_unchanged(cfg, stage)
    with all_or_none(then=lambda: write_record(cfg, stage)):
        yield
        check_params_unchanged(cfg, stage)


def write_record(cfg: Config, stage: str) -> None:
    """The stage's record, written last, after every output is in place."""
    check_params_unchanged(cfg, stage)
    document = {
        "stage": stage,
        "params": stage_params(cfg, stage),
        "outputs": {path: sha256(path) for path in output_files(cfg, stage)},
        "numeric": numerics.environment(),
    }
    write_json(record_path(cfg, stage), document, exact=True)


def upstream(cfg: Config, stage: str, root: Path = PROJECT_ROOT) -> dict[str, list[str]]:
    """{upstream stage: the files of its outputs that `stage` lists as deps}."""
    spec = stages(root)
    deps = {Path(resolve(dep, cfg)) for dep in spec[stage].get("deps", [])}
    found: dict[str, list[str]] = {}
    for name in spec:
        if name == stage:
            continue
        for path in output_files(cfg, name, root):
            if Path(path) in deps or any(dep in Path(path).parents for dep in deps):
                found.setdefault(name, []).append(path)
    return found


def read_record(cfg: Config, stage: str) -> dict:
    """A stage's record, or one line saying it is not one (garbage, half a file)."""
    path = record_path(cfg, stage)
    try:
        record = read_json(path)
    except ValueError:
        record = None
    shaped = isinstance(record, dict) and all(
        isinstance(record.get(key), dict) for key in ("params", "outputs")
    )
    if not shaped:
        raise ConfigError(
            f"{path} is not a provenance record (not the JSON the {stage} stage writes): "
            f"rerun `dvc repro --force -s {stage}`, then `dvc repro`"
        )
    return record


def verify_inputs(cfg: Config, stage: str) -> None:
    """Refuse upstream outputs made from other params, or not the bytes their stage
    recorded. One line naming the file, the keys that changed, and what to run."""
    for name, paths in upstream(cfg, stage).items():
        record = read_record(cfg, name)
        changes = changed_keys(record["params"], stage_params(cfg, name))
        if changes:
            raise ConfigError(
                f"{paths[0]} was made by the {name} stage from other params than "
                f"params.yaml holds ({'; '.join(changes)}; params.yaml changed during or "
                f"after that run): rerun `dvc repro --force -s {name}`, then `dvc repro`"
            )
        for path in paths:
            if path not in record["outputs"] or sha256(path) != record["outputs"][path]:
                raise ConfigError(
                    f"{path} is not what the {name} stage last recorded (changed since, or "
                    f"half-published by a killed run): rerun `dvc repro --force -s {name}`"
                )


# --- a foreach stage's cells: one file per cell, each carrying the params it was made from --


def cell_path(folder: str, task: str, variant: str) -> Path:
    return Path(folder) / f"{task}-{variant}.json"


def cell_params(cfg: Config, stage: str, root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """The params every <stage>@<cell> stage lists (dvc.yaml's foreach body of an
    experiment of cells), flattened, as write_json writes them (the cell file holds them
    at the written precision)."""
    from pipeline.core.precision import rounded

    return rounded(listed_params(cfg, stages(root)[stage]["do"]["params"]))


def any_cell_ran(cfg: Config, stage: str) -> bool:
    """Whether a file of any cell the config lists for `stage` exists: none, its cell
    stages have not run (the report shows what there is); some, each must be there."""
    folder = getattr(cfg.paths, stage)
    cells = getattr(cfg, stage).cells.values()
    return any(cell_path(folder, cell.task, cell.variant).exists() for cell in cells)


def cell_documents(cfg: Config, stage: str) -> list[tuple[Path, dict]]:
    """(file, document) of every cell the config lists for the experiment `stage`,
    in its order, each checked against the params it was made from. A file of a cell
    the config does not list is not read: stale cells are never shown."""
    current = cell_params(cfg, stage)
    cells = []
    for key, cell in to_container(cfg)[stage]["cells"].items():
        path = cell_path(getattr(cfg.paths, stage), cell["task"], cell["variant"])
        if not path.exists():
            raise ConfigError(f"missing {path} ({stage} cell {key}): run `dvc repro`")
        remake = f"dvc repro -s {shlex.quote(stage + '@' + key)}"
        document = read_json(path, remake)
        if not isinstance(document, dict):
            raise ConfigError(
                f"{path} is not a {stage} cell file (JSON {type(document).__name__}, not an "
                f"object): rerun `{remake}`"
            )
        if (document.get("task"), document.get("variant")) != (cell["task"], cell["variant"]):
            raise ConfigError(
                f"{path} does not hold the {stage} cell {key} (task "
                f"{document.get('task')!r}, variant {document.get('variant')!r}): rerun "
                f"`{remake}`"
            )
        changes = changed_keys(document.get("params", {}), current)
        if "params" not in document or changes:
            made = "; ".join(changes) or "no record of its params"
            raise ConfigError(
                f"{path} was made from other params than params.yaml holds ({made}): "
                f"rerun `{remake}`, then `dvc repro`"
            )
        cells.append((path, document))
    return cells


def cell_results(cfg: Config, stage: str, figures: str) -> dict | None:
    """What report.md reads of the experiment of cells `stage` (the grid, the debate):
    {"cells": each cell's document, "images": the PNGs of its figure stage's folder
    `figures`, as report.md links them}; None where the config lists no cell or none
    has run. A missing or stale cell is refused (`cell_documents`)."""
    if not any_cell_ran(cfg, stage):
        return None
    cells = [document for _, document in cell_documents(cfg, stage)]
    return {"cells": cells, "images": folder_images(cfg, figures)}
