"""Written precision: every float an output holds has at most DECIMALS decimals."""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.config import PROJECT_ROOT
from pipeline.core import precision
from pipeline.core.files import parquet_bytes, write_csv, write_json

DECIMALS = precision.DECIMALS


def decimals(value: float) -> int:
    """Decimals of a float's shortest repr: 0.25 -> 2, 1e-05 -> 5."""
    return max(0, -Decimal(repr(value)).as_tuple().exponent)


def test_settle_and_rounded_agree_and_keep_at_most_the_written_decimals():
    values = torch.randn(10_000, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    settled = precision.settle(values)
    assert torch.equal(
        settled, torch.tensor(precision.rounded(values.tolist()), dtype=torch.float64)
    )
    assert torch.equal(settled, torch.from_numpy(np.round(values.numpy(), DECIMALS)))
    assert max(decimals(v) for v in settled.tolist()) <= DECIMALS
    assert (settled - values).abs().max() <= 0.5e-8 + 1e-16
    assert torch.equal(precision.settle(settled), settled)  # idempotent
    integers = torch.arange(5)
    assert precision.settle(integers) is integers


def test_rounded_rounds_floats_only():
    document = {"a": 0.123456789123, "b": [1, 2.0000000001, True], "c": "x", "d": None}
    assert precision.rounded(document) == {
        "a": 0.12345679,
        "b": [1, 2.0, True],
        "c": "x",
        "d": None,
    }
    nan = precision.rounded({"tau": float("nan")})["tau"]
    assert nan != nan


def test_the_writers_round_and_provenance_stays_exact(tmp_path):
    frame = pd.DataFrame({"id": [1, 2], "weight": [1 / 3, 2 / 3], "flag": [True, False]})
    write_csv(tmp_path / "t.csv", frame)
    assert (
        tmp_path / "t.csv"
    ).read_text() == "id,weight,flag\n1,0.33333333,True\n2,0.66666667,False\n"
    back = pd.read_parquet(__import__("io").BytesIO(parquet_bytes(frame)))
    assert back["weight"].tolist() == [0.33333333, 0.66666667]
    assert back["id"].tolist() == [1, 2]
    write_json(tmp_path / "n.json", {"x": 1 / 3})
    write_json(tmp_path / "p.json", {"lr": 1 / 3}, exact=True)
    assert json.loads((tmp_path / "n.json").read_text()) == {"x": 0.33333333}
    assert json.loads((tmp_path / "p.json").read_text()) == {"lr": 1 / 3}


def committed_numbers_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "reports"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [p for p in listed if p.endswith((".json", ".csv")) and "/provenance/" not in p]


def floats_in(path: str) -> list[float]:
    text = (PROJECT_ROOT / path).read_text()
    if path.endswith(".csv"):
        frame = pd.read_csv(PROJECT_ROOT / path)
        return [float(v) for c in frame.select_dtypes("floating") for v in frame[c].dropna()]
    found: list[float] = []

    def walk(node):
        if isinstance(node, float):
            found.append(node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(text))
    return found


@pytest.mark.parametrize("path", committed_numbers_files())
def test_no_committed_number_carries_more_than_the_written_decimals(path):
    """The last bits of a float never reach a committed file (the provenance
    records' params are the config's own values, and their outputs are hashes)."""
    too_long = [v for v in floats_in(path) if v == v and decimals(v) > DECIMALS]
    assert not too_long, f"{path}: {too_long[:5]}"


def test_a_rounded_zero_is_positive_whatever_the_sign_of_its_last_bits():
    tiny = -1e-17  # another CPU's noise around a zero
    settled = precision.settle(torch.tensor([tiny], dtype=torch.float64))
    frame = precision.rounded_frame(pd.DataFrame({"x": [tiny]}))
    for zero in (precision.rounded(tiny), float(settled), float(frame["x"].iloc[0])):
        assert np.copysign(1.0, zero) == 1.0
    assert precision.rounded(-0.25) == -0.25
