"""Where the MLflow store may be: inside the project, unless chosen where a pull cannot
choose it.

params.yaml and conf/ arrive with a `git pull` or a `dvc exp pull`: a tracking.uri
there sent runs, params and artifacts to any folder (an existing file there became
0600, with a `.lock` and an `mlartifacts/` beside it) or to any `http(s)` server. So a
config value may name a store inside the project only (the default, null, is its
`mlflow.db`); any other store is an explicit choice of whoever runs the command:
MLflow's own variable MLFLOW_TRACKING_URI, or (the Hydra apps) `tracking.uri=...` on
the command line.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from pipeline.core.errors import ConfigError

CHOICE = "MLFLOW_TRACKING_URI"  # MLflow's variable: the store a run goes to


def store_path(uri: str) -> Path | None:
    """The local file or folder of a store URI (sqlite:///FILE, file:FOLDER, a plain
    path), relative ones from the working directory as MLflow takes them; None for a
    server (http, https, postgresql, mysql) or an in-memory SQLite store."""
    if uri.startswith("sqlite:///"):
        path = uri.removeprefix("sqlite:///").split("?", 1)[0]
    else:
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme == "file":
            path = urllib.request.url2pathname(parsed.path)
        elif not parsed.scheme:
            path = uri
        else:
            return None
    return Path.cwd() / path if path else None


def inside(uri: str, roots: Iterable[Path]) -> bool:
    """Whether the store `uri` is on disk under one of `roots` (links followed)."""
    path = store_path(uri)
    if path is None:
        return False
    resolved = path.resolve()
    return any(resolved.is_relative_to(root.resolve()) for root in roots)


def project_roots(params_folder: Path) -> list[Path]:
    """The folders a config's store may be in: the one of its params.yaml, the project
    DVC runs (DVC_ROOT, also for an experiment in a temporary copy), this checkout."""
    from pipeline.config.schema import PROJECT_ROOT

    return [params_folder, Path(os.environ.get("DVC_ROOT") or PROJECT_ROOT), PROJECT_ROOT]


def check_store_choice(
    uri: str | None, roots: Iterable[Path], source: str, flag: bool = False
) -> None:
    """Refuse a tracking.uri read from `source` (params.yaml, conf/) that names a store
    outside `roots` or a server, unless $MLFLOW_TRACKING_URI names the same store or
    (`flag`) the command line set it."""
    if uri is None or flag or uri == os.environ.get(CHOICE) or inside(uri, roots):
        return
    where = "a server" if store_path(uri) is None else "outside the project"
    command_line = (
        ", or tracking.uri=... on a Hydra app's command line" if source != "params.yaml" else ""
    )
    raise ConfigError(
        f"invalid config value tracking.uri={uri!r}: a store {where} is not taken from "
        f"{source} (it arrives with a pull); choose it with {CHOICE}={uri}{command_line}, "
        "or set tracking.uri to null (the project's mlflow.db) or a store inside the project"
    )
