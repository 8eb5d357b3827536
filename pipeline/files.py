"""Atomic output files: write a temporary sibling, then rename over the target.

An interrupted or failing stage therefore leaves either the old file or the
new one, never half of one.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import pandas as pd


def write_bytes(path: Path, payload: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_json(path: Path, document: dict) -> None:
    write_text(path, json.dumps(document, indent=2) + "\n")


def require(path: Path) -> Path:
    """`path` if it exists, else a one-line error that says how to make it."""
    if not Path(path).exists():
        raise FileNotFoundError(f"missing {path}: run `dvc repro` first")
    return Path(path)


def read_json(path: Path) -> dict:
    return json.loads(require(path).read_text())


def write_parquet(path: Path, frame: pd.DataFrame) -> None:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False, engine="pyarrow", compression="zstd")
    write_bytes(path, buffer.getvalue())


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_text(path, frame.to_csv(index=False, lineterminator="\n"))


def read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(require(path))


def read_parquet(path: Path) -> pd.DataFrame:
    return pd.read_parquet(require(path))
