"""The next lesson's grid: a seed distribution for each task x model cell.

Every cell trains seeds 1..grid.seeds through the study's machinery
(`seed_study.train_sets`: the same data, held-out split and training settings as the
lesson, only the task's labels and the model differ), and reports the held-out
accuracy distribution (mean with its multi-bootstrap interval, quantiles), the
share of seeds that solve the task (held-out >= grid.solved), the majority
baseline and the gap to the cell's hand-set model (`capacity`).

On a task whose label depends on the order of the steps (a task module's
`ORDERED`), the cell also trains on the shuffled-steps control: the same
sequences with their steps permuted (the marker moves with its step, the label
stays), which no model can read order from. Accuracy above the control is what
the model owes to order; paired by seed and example, it gets its own interval.

With more than one head: each head's marker mass and the entropy of its weights
(over log T: 1 is even), and the share of seeds that divide the work, one head
focused on the marker (marker mass >= FOCUSED) and another spread (>= SPREAD).

The faithfulness battery (pipeline/analysis/faithfulness.py) scores every
explainer on the cell's first grid.faithfulness_seeds seeds, against the model and
against the task's rationale (`rationale` of pipeline/tasks/: the steps that decide
the label); only the metrics that apply to it (`faithfulness.applicable_metrics`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from pipeline import data, tasks
from pipeline.analysis import faithfulness, metrics, sanity, seed_study, stats
from pipeline.config import Config, cells
from pipeline.core import ties
from pipeline.core.kinds import VARIANTS
from pipeline.core.measures import ATTENTION
from pipeline.core.processes import map_large_blocks, release_freed_memory
from pipeline.experiments.grid import capacity, suppressors
from pipeline.models import frames, interface
from pipeline.models.parameters import Params
from pipeline.models.train import device_and_dtype

FOCUSED = 0.5  # a head's mean weight on the marked step
SPREAD = 0.75  # a head's mean weight entropy over log T


def cell_config(cfg: Config, task: str, variant: str) -> Config:
    """A grid cell's config: the task and the model variant on the lesson's settings,
    with the grid's own epochs and learning rate (grid.epochs, grid.lr)."""
    return cells.cell_config(cfg, task, variant, cfg.grid)


def shuffled_steps(frame: pd.DataFrame, steps: int, seed: int) -> pd.DataFrame:
    """Each sequence's steps in an order drawn from numpy's default_rng(seed): the
    readings and the marked step move together, the label stays."""
    columns = data.reading_columns(steps)
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(steps) for _ in range(len(frame))])  # new -> old
    readings = frame[columns].to_numpy()
    shuffled = frame.copy()
    shuffled[columns] = np.take_along_axis(readings, orders, axis=1)
    shuffled["marked_step"] = (orders == frame["marked_step"].to_numpy()[:, None]).argmax(1)
    return shuffled


def accuracy_summary(runs: seed_study.SeedRuns, cfg: Config, solved: float) -> dict:
    """Held-out accuracy over seeds: describe, 95% multi-bootstrap interval, solved share."""
    per_seed = runs.values["heldout_accuracy"].mean(-1)
    low, high = seed_study.bootstrap_intervals(runs, cfg, ["heldout_accuracy"])["heldout_accuracy"]
    return {
        **stats.describe(per_seed),
        "ci95_low": low,
        "ci95_high": high,
        "share_solved": float((~ties.below(per_seed, solved)).to(torch.float64).mean()),
    }


def paired_difference(first: torch.Tensor, second: torch.Tensor, cfg: Config) -> dict:
    """Mean of first - second (S, N) per-example values, paired by seed and example,
    with its 95% multi-bootstrap interval."""
    difference = first - second
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    seeds = stats.resample_counts(difference.shape[0], cfg.study.bootstrap, generator)
    examples = stats.resample_counts(difference.shape[1], cfg.study.bootstrap, generator)
    low, high = stats.interval(stats.multi_bootstrap_means(difference, seeds, examples))
    return {"mean": float(difference.mean()), "ci95_low": low, "ci95_high": high}


def head_numbers(
    cfg: Config, runs: seed_study.SeedRuns, heldout: tuple[torch.Tensor, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per seed and head: marker mass and weight entropy over log T, (S, H) each."""
    inputs, _, marked = heldout
    params = interface.from_flat(runs.params.to(inputs), cfg.model, cfg.data.steps)
    weights = interface.head_weights(params, inputs).transpose(1, 2)  # (S, H, N, T)
    mass = metrics.marked_weight(weights, marked).mean(-1)
    entropy = -(weights * weights.clamp_min(1e-300).log()).sum(-1).mean(-1)
    return mass.cpu(), (entropy / math.log(cfg.data.steps)).cpu()


def heads_summary(mass: torch.Tensor, entropy: torch.Tensor) -> dict:
    """Per head (in the order the model holds them) and whether the work is divided."""
    focused, spread = ~ties.below(mass, FOCUSED), ~ties.below(entropy, SPREAD)  # (S, H)
    other = ~torch.eye(mass.shape[1], dtype=torch.bool)  # head i focused, a different j spread
    divided = (focused[:, :, None] & spread[:, None, :] & other).any((1, 2))
    return {
        "per_head": [
            {"marker_mass": float(mass[:, h].mean()), "entropy": float(entropy[:, h].mean())}
            for h in range(mass.shape[1])
        ],
        "share_divided": float(divided.to(torch.float64).mean()),
        "per_seed_marker_mass": mass.tolist(),  # (S, H)
        "per_seed_entropy": entropy.tolist(),
    }


def cell_battery(
    cfg: Config,
    task: str,
    runs: seed_study.SeedRuns,
    heldout: tuple[torch.Tensor, ...],
    frame: pd.DataFrame,
    labelled: tuple[Params, torch.Tensor],
) -> dict:
    """The battery's summary over the first grid.faithfulness_seeds runs (means with a
    95% bootstrap interval over runs, share first), the task's metrics only, each
    explainer against attention paired on the same runs and examples, and the
    randomisation sanity checks on those runs (`labelled`: their inits trained on
    permuted labels)."""
    inputs, _, marked = heldout
    count = min(cfg.grid.faithfulness_seeds, len(runs.seeds))
    params = interface.from_flat(runs.params[:count].to(inputs), cfg.model, cfg.data.steps)
    rationale = faithfulness.task_rationale(task, marked, cfg.data.steps)
    per_example = faithfulness.battery_tensors(
        params,
        inputs,
        rationale,
        runs.seeds[:count],
        settings=cfg.faithfulness,
        per_example=True,
    )
    applies = faithfulness.applicable_metrics(rationale.tolist())
    per_example = {row: {m: numbers[m] for m in applies} for row, numbers in per_example.items()}
    table = {row: faithfulness.run_means(numbers) for row, numbers in per_example.items()}
    resamples, bootstrap_seed = cfg.study.bootstrap, cfg.study.bootstrap_seed
    summary = faithfulness.study_summary(table, resamples, bootstrap_seed)
    summary["paired"] = faithfulness.study_pairs(
        per_example, resamples, bootstrap_seed, reference=ATTENTION
    )
    summary["sanity"] = sanity.checks(cfg, frame, params, runs.seeds[:count], inputs, labelled)
    return summary


def suppressor_shares(
    cfg: Config,
    task: str,
    variant: str,
    runs: seed_study.SeedRuns,
    heldout: tuple[torch.Tensor, ...],
) -> dict:
    """Each explainer's attribution on the task's suppressor steps (its `suppressors`),
    on the rationale and elsewhere: over the battery's runs, and for the cell's
    hand-set model (which uses the suppressor by construction), where it has one."""
    inputs, _, marked = heldout
    count = min(cfg.grid.faithfulness_seeds, len(runs.seeds))
    params = interface.from_flat(runs.params[:count].to(inputs), cfg.model, cfg.data.steps)
    module = tasks.task_module(task)
    suppressor = torch.tensor(
        [[t in module.suppressors(int(m), cfg.data.steps) for t in range(cfg.data.steps)]
         for m in marked.tolist()],
        device=inputs.device,
    )  # fmt: skip
    rationale = faithfulness.task_rationale(task, marked, cfg.data.steps).to(inputs.device)
    document = {"trained": suppressors.summary(cfg, params, inputs, rationale, suppressor)}
    construction, _ = capacity.capacity(task, variant)
    if construction is not None:
        hand = construction(cfg.model, cfg.data.steps, cfg.data.threshold)
        hand = hand.map(lambda t: t.to(inputs))
        document["hand_set"] = suppressors.summary(cfg, hand, inputs, rationale, suppressor)
    return document


def run_cell(cfg: Config, task: str, variant: str) -> dict:
    """One cell's document (reports/grid/<task>-<variant>.json)."""
    cell = cell_config(cfg, task, variant)
    device, dtype = device_and_dtype(cell.train)
    frame = data.generate(cell.data, task)
    heldout = frames.split_tensors(cell, frame, "heldout", device, dtype)
    labels = heldout[1]
    positive = float(labels.mean())
    seeds = list(range(1, cfg.grid.seeds + 1))
    sets = [(frame, False)]
    if getattr(tasks.task_module(task), "ORDERED", False):
        sets.append((shuffled_steps(frame, cell.data.steps, cfg.grid.shuffle_seed), True))
    runs, *controls = seed_study.train_sets(cell, sets, seeds)  # the control on the same threads
    hand = capacity.hand_set_accuracy(
        task, variant, cfg.model, tuple(t.cpu() for t in heldout), cfg.data.threshold
    )
    accuracy = accuracy_summary(runs, cell, cfg.grid.solved)
    document: dict = {
        "task": task,
        "variant": variant,
        "model": VARIANTS[variant],
        "seeds": len(seeds),
        "majority_baseline": max(positive, 1.0 - positive),
        "hand_set_accuracy": hand,
        "hand_set_note": capacity.capacity(task, variant)[1],
        "heldout_accuracy": accuracy,
        "per_seed_heldout_accuracy": runs.values["heldout_accuracy"].mean(-1).tolist(),
        "gap_to_hand_set": None if hand is None else hand - accuracy["mean"],
    }
    if controls:
        (shuffled,) = controls
        document["shuffled"] = accuracy_summary(shuffled, cell, cfg.grid.solved)
        document["above_shuffled"] = paired_difference(
            runs.values["heldout_accuracy"], shuffled.values["heldout_accuracy"], cell
        )
    if interface.pooling_heads(cell.model) > 1:
        document["heads"] = heads_summary(*head_numbers(cell, runs, heldout))
    # The sanity checks' models on permuted labels train here, in the training's
    # phase: trained after the battery, they would grow a heap that it left.
    battery_seeds = seeds[: min(cfg.grid.faithfulness_seeds, len(seeds))]
    labelled = sanity.label_randomised(cell, frame, battery_seeds, device, dtype)
    release_freed_memory()  # the training's heap, before the battery's phase
    map_large_blocks()  # the battery's peak: what it holds, however the heap would fragment
    document["faithfulness"] = cell_battery(cell, task, runs, heldout, frame, labelled)
    if hasattr(tasks.task_module(task), "suppressors"):
        document["suppressors"] = suppressor_shares(cell, task, variant, runs, heldout)
    return document
