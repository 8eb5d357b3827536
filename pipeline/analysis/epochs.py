"""The mechanism over training: the lesson's per-run numbers at every epoch of a run.

Training keeps each epoch's parameters (`train(trajectory=True)`); each epoch is then
measured as the trained run is (pipeline/analysis/metrics.py): held-out accuracy,
marker mass, argmax hit (hit@1) and, every `agreement_every` epochs and at the end,
the weight-effect agreement, whose step ablation costs a forward pass per step.
Row e is the model before update e; the last row is the trained model, whose
numbers are the seed study's own. The loss and train accuracy of the rows before it
are training's own (`History`), so no epoch is evaluated on the train split twice.
"""

from __future__ import annotations

import pandas as pd
import torch

from pipeline.analysis import metrics
from pipeline.core.precision import settle
from pipeline.models import interface
from pipeline.models.parameters import Params, to_flat
from pipeline.models.train import History, accuracy, mean_bce

# The per-epoch numbers, in the order reports/study/dynamics.parquet holds them.
EPOCH_VALUES = (
    "loss",
    "train_accuracy",
    "heldout_accuracy",
    "marker_mass",
    "argmax_hit",
    "weight_effect_agreement",
)


def agreement_epochs(epochs: int, every: int) -> list[int]:
    """The rows (0..epochs) whose weight-effect agreement is measured: every `every`-th
    and the trained model's."""
    return sorted({*range(0, epochs + 1, every), epochs})


def heldout_numbers(
    params: Params, heldout: tuple[torch.Tensor, ...], with_agreement: bool
) -> dict[str, torch.Tensor]:
    """One epoch's held-out numbers (S,) (NaN agreement where it is not measured)."""
    inputs, labels, marked = heldout
    logits, weights = interface.forward(params, inputs)
    numbers = {
        "heldout_accuracy": metrics.correct(logits, labels).mean(-1),
        "marker_mass": metrics.marker_mass(weights, marked),
        "argmax_hit": metrics.argmax_hit(weights, marked),
    }
    if with_agreement:
        effects = metrics.ablation_effects(params, inputs)
        numbers["weight_effect_agreement"] = metrics.agreement(weights, effects)
    else:
        numbers["weight_effect_agreement"] = torch.full_like(logits[..., 0], float("nan"))
    return numbers


def epoch_values(
    history: History,
    trained: Params,
    train_split: tuple[torch.Tensor, torch.Tensor],
    heldout: tuple[torch.Tensor, ...],
    agreement_every: int,
) -> dict[str, torch.Tensor]:
    """Each of EPOCH_VALUES at rows 0..epochs: (epochs + 1, S).

    Each epoch's parameters are settled at the written precision before they are
    measured, as the trained ones are, so the numbers start from the same values on
    any machine (pipeline/core/precision.py)."""
    kept = history.params
    if kept is None:
        raise ValueError("the history kept no parameters: train with trajectory=True")
    epochs = kept.shape[0]
    flat = settle(torch.cat([kept, to_flat(trained)[None]]))
    measured = set(agreement_epochs(epochs, agreement_every))
    # Filled in place: a small tensor kept from each epoch, between its temporaries,
    # would fragment the heap (a study's peak tripled).
    held = {name: flat.new_empty((epochs + 1, flat.shape[1])) for name in EPOCH_VALUES[2:]}
    for epoch in range(epochs + 1):
        params = interface.from_flat(flat[epoch], trained.cfg, heldout[0].shape[1])
        for name, value in heldout_numbers(params, heldout, epoch in measured).items():
            held[name][epoch] = value
    train_logits, _ = interface.forward(trained, train_split[0])
    values = {
        "loss": torch.cat([history.loss, mean_bce(train_logits, train_split[1])[None]]),
        "train_accuracy": torch.cat(
            [history.accuracy, accuracy(train_logits, train_split[1])[None]]
        ),
    }
    merged = {**values, **held}
    return {name: merged[name] for name in EPOCH_VALUES}


def epochs_table(seeds: list[int], values: dict[str, torch.Tensor]) -> pd.DataFrame:
    """One row per seed and epoch (0..epochs, the last the trained model) of
    `epoch_values`' numbers (each (epochs + 1, S)), NaN where the agreement is not
    measured: reports/study/dynamics.parquet."""
    rows = next(iter(values.values())).shape[0]
    table = pd.DataFrame(
        {
            "seed": [seed for seed in seeds for _ in range(rows)],
            "epoch": list(range(rows)) * len(seeds),
        }
    )
    for name, value in values.items():
        table[name] = value.T.reshape(-1).numpy()
    return table
