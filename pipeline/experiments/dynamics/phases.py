"""The dynamics stage's own trainings: the study's runs with one initial parameter's
last bit flipped (Summers & Dinneen 2021), and the phase diagram, the learning rate x
the init scale against which story wins (Zhong et al. 2023: small changes to the
settings give different mechanisms).

Every training is a job on threads of our own (pipeline/models/threads.py), each on
one torch thread: the flipped runs in pieces, the phase diagram one job per
learning rate. A lesson run never meets another in training, so the grouping moves
no number.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import torch

from pipeline.analysis import metrics
from pipeline.config import Config
from pipeline.core import ties
from pipeline.experiments.dynamics.noise import flip_last_bit
from pipeline.models import interface
from pipeline.models.parameters import Params, cat_runs, to_flat
from pipeline.models.threads import run_jobs, workers
from pipeline.models.train import finite_runs, train

Split = tuple[torch.Tensor, ...]
Outcome = tuple[dict[str, torch.Tensor], torch.Tensor]
PIECE = 250  # flipped runs per job
CELL_KEYS = ("share_found", "share_diverged", "heldout_accuracy")


def outcome(trained: Params, finite: torch.Tensor, heldout: Split) -> dict[str, torch.Tensor]:
    """Each run's held-out accuracy and hit@1 (S,), NaN for a run that diverged."""
    inputs, labels, marked = heldout
    logits, weights = interface.forward(trained, inputs)
    numbers = {
        "heldout_accuracy": metrics.correct(logits, labels).mean(-1),
        "argmax_hit": metrics.argmax_hit(weights, marked),
    }
    nan = torch.tensor(float("nan"), dtype=logits.dtype)
    return {name: torch.where(finite, value, nan) for name, value in numbers.items()}


def trained_runs(
    initial: Params, train_split: Split, heldout: Split, epochs: int, lr: float
) -> Outcome:
    """`initial` trained as the study trains (full-batch descent): each run's numbers
    (`outcome`) and trained flat parameters (S, P)."""
    trained, history = train(initial, *train_split[:2], epochs, lr, check=False)
    return outcome(trained, finite_runs(history.loss, trained), heldout), to_flat(trained)


def flipped_initial(cfg: Config, seeds: list[int], dtype: torch.dtype) -> Params:
    """The study's inits with the last bit of parameter dynamics.flip_parameter flipped."""
    initial = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps, dtype)
    flat = flip_last_bit(to_flat(initial), cfg.dynamics.flip_parameter)
    return interface.from_flat(flat, cfg.model, cfg.data.steps)


def phase_initial(cfg: Config, dtype: torch.dtype) -> Params:
    """Seeds 1..dynamics.phase_seeds at each init scale, the scales one after another."""
    seeds = list(range(1, cfg.dynamics.phase_seeds + 1))
    return cat_runs(
        [
            interface.init_params(
                cfg.data.seed, seeds, replace(cfg.model, init_scale=scale), cfg.data.steps, dtype
            )
            for scale in cfg.dynamics.phase_init_scales
        ]
    )


def trainings(
    cfg: Config, seeds: list[int], train_split: Split, heldout: Split
) -> tuple[Outcome, list[Outcome]]:
    """The flipped runs' outcome, and the phase diagram's, one per learning rate."""
    dtype, epochs = train_split[0].dtype, cfg.train.epochs
    flipped = flipped_initial(cfg, seeds, dtype)
    phase = phase_initial(cfg, dtype)
    jobs = [
        partial(trained_runs, part, train_split, heldout, epochs, cfg.train.lr)
        for _, part in flipped.blocks(PIECE)
    ]
    jobs += [
        partial(trained_runs, phase, train_split, heldout, epochs, lr)
        for lr in cfg.dynamics.phase_lrs
    ]
    results = run_jobs(jobs, workers(len(jobs)))
    pieces = len(jobs) - len(cfg.dynamics.phase_lrs)
    flipped_parts = results[:pieces]
    joined = (
        {
            name: torch.cat([numbers[name] for numbers, _ in flipped_parts])
            for name in flipped_parts[0][0]
        },
        torch.cat([params for _, params in flipped_parts]),
    )
    return joined, results[pieces:]


def phase_diagram(cfg: Config, columns: list[Outcome]) -> dict:
    """For each (init scale, lr) cell: the share of seeds that find the marked step
    (hit@1 at or above dynamics.found), the share that diverge, and the mean held-out
    accuracy of the rest (None where all diverge). Rows: init scales; columns:
    learning rates (`columns`: each lr's outcome, the scales one after another)."""
    settings = cfg.dynamics
    rows = len(settings.phase_init_scales)
    cells = [
        [
            cell_numbers({k: v.view(rows, -1)[row] for k, v in numbers.items()}, settings.found)
            for numbers, _ in columns
        ]
        for row in range(rows)
    ]
    return {
        "lrs": list(settings.phase_lrs),
        "init_scales": list(settings.phase_init_scales),
        "seeds": settings.phase_seeds,
        **{key: [[cell[key] for cell in row] for row in cells] for key in CELL_KEYS},
    }


def cell_numbers(numbers: dict[str, torch.Tensor], found: float) -> dict:
    """One phase cell's shares over its seeds (`outcome`'s numbers, NaN: diverged)."""
    hit = numbers["argmax_hit"]
    finite = ~torch.isnan(hit)
    reached = finite & ~ties.below(torch.nan_to_num(hit), found)
    kept = numbers["heldout_accuracy"][finite]
    return {
        "share_found": float(reached.to(torch.float64).mean()),
        "share_diverged": float((~finite).to(torch.float64).mean()),
        "heldout_accuracy": float(kept.mean()) if len(kept) else None,
    }
