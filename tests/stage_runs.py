"""Every computing stage's `run()` on a small config, as the bytes it would write.

Shared by the device-guard tests (tests/stages/test_device_guard.py: `train.device=cuda`
on a simulated device, CPU-only) and the GPU tier (tests/models/test_gpu.py: real CUDA):
each stage on the device against the same stage on the CPU. A stage's outputs are
rendered as its writers render them (`files.write_json`'s rounding and JSON,
`files.parquet_bytes`), so "equal" means the bytes a repro would commit.
"""

from __future__ import annotations

import io
import json

import pandas as pd

from pipeline.config import Config, validate
from pipeline.core.files import parquet_bytes
from pipeline.core.precision import rounded, rounded_frame
from tests.conftest import composed, small_overrides

# Small enough for the fast tier, one grid cell per model kind, every debate cell.
OVERRIDES = [
    *small_overrides(),
    "study.seeds=3",
    "grid.seeds=2",
    "grid.epochs=10",
    "debate.seeds=3",
    "debate.permutations=3",
    "faithfulness.sanity_seeds=2",
]
GRID_CELLS = [
    ("rise", "lesson"),
    ("two_patterns", "sink"),
    ("two_patterns", "multihead2"),
    ("first_half", "posenc_learned"),
    ("rise", "window2"),
]
DEBATE_CELLS = [
    ("lesson", "lesson"),
    ("lesson", "window3"),
    ("first_half", "posenc_learned"),
    ("rise", "window2"),
]


def small_config(device: str) -> Config:
    return validate(composed([*OVERRIDES, f"train.device={device}"]))


def as_json(document: dict) -> bytes:
    return json.dumps(rounded(document), indent=2).encode()


def _read_back(document: dict) -> dict:
    """A document as the next stage reads it: from the JSON its stage wrote."""
    return json.loads(as_json(document))


def _as_read(frame: pd.DataFrame) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(parquet_bytes(frame)))


# The grid's two-heads cells the dynamics stage pairs, as the lesson group has no grid.
TWO_HEADS, ONE_HEAD = [0.9, 0.8, 0.95], [0.7, 0.8, 0.9]


def lesson_stages(cfg: Config) -> dict[str, bytes]:
    """generate, train, evaluate, study, faithfulness, dynamics and report, each on the
    one before."""
    from pipeline.analysis import epochs, seed_study
    from pipeline.experiments.dynamics import stage as dynamics
    from pipeline.experiments.faithfulness import stage as faithfulness
    from pipeline.models import frames
    from pipeline.stages import evaluate, generate, report, train

    frame, summary = generate.run(cfg)
    params, history = train.run(cfg, frame)
    lesson = frames.params_to_frame(params, cfg.train.seeds, cfg.model, cfg.data.steps)
    curves = train.curves_frame(history, list(cfg.train.seeds))
    document, steps = evaluate.run(cfg, frame, summary, params)
    runs = seed_study.study_runs(cfg, frame, dynamics=True)
    study, study_summary = seed_study.outcome(cfg, frame, runs)
    epochs = epochs.epochs_table(runs.seeds, runs.epochs)
    battery, battery_seeds, battery_summary = faithfulness.run(cfg, frame, lesson, study)
    inputs = {
        "sequences": frame,
        "dynamics": _as_read(epochs),
        "seeds": _as_read(study),
        "params": _as_read(study),
        "battery": _as_read(battery_seeds),
        "cells": [
            {"per_seed_heldout_accuracy": TWO_HEADS},
            {"per_seed_heldout_accuracy": ONE_HEAD},
        ],
    }
    mechanism = dynamics.run(cfg, inputs, _read_back(study_summary))
    markdown, pngs, weights, page = report.run(
        cfg,
        _read_back(document),
        _as_read(steps),
        _as_read(curves),
        {
            "study": (_read_back(study_summary), _as_read(study)),
            "dynamics": _read_back(mechanism),
            "faithfulness": (
                _read_back(battery),
                _read_back(battery_summary),
                _as_read(battery_seeds),
            ),
        },
    )
    return {
        "train": parquet_bytes(lesson) + parquet_bytes(curves),
        "evaluate": as_json(document) + parquet_bytes(steps),
        "study": parquet_bytes(study) + as_json(study_summary) + parquet_bytes(epochs),
        "dynamics": as_json(mechanism),
        "faithfulness": as_json(battery) + parquet_bytes(battery_seeds) + as_json(battery_summary),
        "report": markdown.encode()
        + b"".join(pngs.values())
        + parquet_bytes(weights)
        + page.encode(),
    }


def grid_cells(cfg: Config) -> dict[str, bytes]:
    """One grid cell of each model kind, and next_lesson's figures and section from them."""
    from pipeline.experiments.grid import cell as grid
    from pipeline.experiments.grid.figures import next_lesson_figures
    from pipeline.experiments.grid.section import experiments, next_lesson_section

    documents = {f"grid {t}-{v}": grid.run_cell(cfg, t, v) for t, v in GRID_CELLS}
    read = [_read_back(document) for document in documents.values()]
    pngs = next_lesson_figures(*experiments(read))
    section = next_lesson_section(read, sorted(pngs))
    return {
        **{name: as_json(document) for name, document in documents.items()},
        "next_lesson": section.encode() + b"".join(pngs.values()),
    }


def debate_cells(cfg: Config) -> dict[str, bytes]:
    """Every debate cell, and debate_figures' figures from them."""
    from pipeline.experiments.debate.cell import run_cell
    from pipeline.experiments.debate.figures import debate_figures

    documents = {f"debate {t}-{v}": run_cell(cfg, t, v) for t, v in DEBATE_CELLS}
    pngs = debate_figures([_read_back(document) for document in documents.values()])
    return {
        **{name: as_json(document) for name, document in documents.items()},
        "debate_figures": b"".join(pngs.values()),
    }


def field_stages(cfg: Config) -> dict[str, bytes]:
    """erasure, roar and abstraction on the small lesson's and study's runs."""
    from pipeline.analysis import seed_study
    from pipeline.experiments.abstraction import stage as abstraction
    from pipeline.experiments.erasure import stage as erasure
    from pipeline.experiments.roar import retrain
    from pipeline.models import frames
    from pipeline.stages import generate, train

    frame, _ = generate.run(cfg)
    params, _ = train.run(cfg, frame)
    lesson = _as_read(frames.params_to_frame(params, cfg.train.seeds, cfg.model, cfg.data.steps))
    study = _as_read(seed_study.run(cfg, frame)[0])
    document, seeds = erasure.run(cfg, frame, lesson, study)
    return {
        "erasure": as_json(document) + rounded_frame(seeds).to_csv(index=False).encode(),
        "roar": as_json(retrain.run(cfg, frame, lesson)),
        "abstraction": as_json(abstraction.run(cfg, frame, study)),
    }


# Each computing stage's outputs, by the id its test takes.
GROUPS = {"lesson": lesson_stages, "grid": grid_cells, "debate": debate_cells}
NAMES = {
    "lesson": ["train", "evaluate", "study", "faithfulness", "dynamics", "report"],
    "grid": [*(f"grid {t}-{v}" for t, v in GRID_CELLS), "next_lesson"],
    "debate": [*(f"debate {t}-{v}" for t, v in DEBATE_CELLS), "debate_figures"],
}
# (group, output) per test, and its id: one test per stage in each tier.
CASES = [(group, name) for group, names in NAMES.items() for name in names]
IDS = [name.replace(" ", "-") for _, name in CASES]
