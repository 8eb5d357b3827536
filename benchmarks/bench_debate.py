"""Seconds and numbers of the attention debate's experiments (pipeline/experiments/debate/).

    python benchmarks/bench_debate.py [--seeds 1000] [--chunk 100]

Trains `--seeds` runs of the default config (timed apart), then solves the exact
adversary on every held-out sequence of every run at each eps of [0.01, 0.05],
`--chunk` runs at a time, times permuted attention and the seed variance, trains
uniform, frozen and deceptive attention, and prints the seconds and the numbers of
the lesson's two runs (docs/debate.md).
"""

from __future__ import annotations

import argparse
import time

import torch

from pipeline.config import compose, validate
from pipeline.experiments.debate.adversary import runs_adversary
from pipeline.experiments.debate.deception import rationale_mass, train_deceptive
from pipeline.experiments.debate.fixed_attention import step_weights, train_fixed, uniform_weights
from pipeline.experiments.debate.permutation import permutation_orders, permuted_output_change
from pipeline.experiments.debate.pooling import fixed_logits, pooling_terms
from pipeline.experiments.debate.seed_variance import pair_divergence, seed_pairs
from pipeline.memory import adversary_pass
from pipeline.models import frames, interface
from pipeline.models.pooling import probability
from pipeline.models.train import accuracy, finite_runs, train
from pipeline.stages import generate
from pipeline.tasks import rationale_rows

EPSILONS = (0.01, 0.05)
PERMUTATIONS = 100
TRAINED = 100  # runs of the experiments that train (uniform, frozen, deceptive)
PENALTIES = (0.0, 0.1, 1.0, 10.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100)
    args = parser.parse_args()
    cfg = validate(compose())
    frame, _ = generate.run(cfg)
    inputs, labels, _ = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    heldout = frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)[0]
    seeds = list(range(1, args.seeds + 1))
    started = time.perf_counter()
    params = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps)
    params = train(params, inputs, labels, cfg.train.epochs, cfg.train.lr)[0]
    print(f"trained {args.seeds} runs in {time.perf_counter() - started:.1f} s")
    marked = frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)[2]
    chunks = [
        params.map(lambda t, s=start: t[s : s + args.chunk])
        for start in range(0, args.seeds, args.chunk)
    ]
    for eps in EPSILONS:
        started = time.perf_counter()
        found = [runs_adversary(chunk, heldout, eps) for chunk in chunks]
        seconds = time.perf_counter() - started
        maxima = torch.cat([f.max_jsd for f in found])
        first = found[0].weights[..., 0, :]  # the lesson's one head
        on_marked = first.gather(-1, marked.expand(args.chunk, -1)[..., None])[..., 0]
        print(
            f"exact adversary, eps {eps}: {args.seeds} runs x {heldout.shape[0]} held-out "
            f"in {seconds:.2f} s; median max JSD {float(maxima.median()):.4f}"
        )
        for run in (0, 1):
            print(
                f"  seed {run + 1}: median max JSD {float(maxima[run].median()):.4f}, "
                f"share >= 0.5 {float((maxima[run] >= 0.5).double().mean()):.4f}, "
                f"adversary's weight on the marked step {float(on_marked[run].mean()):.4f}"
            )
    orders = permutation_orders(heldout.shape[0], PERMUTATIONS, cfg.data.steps, seed=0)
    started = time.perf_counter()
    changes, weights, outputs = [], [], []
    for chunk in chunks:
        terms = pooling_terms(chunk, heldout)
        changes.append(permuted_output_change(terms.weights, terms.readouts, terms.bias, orders))
        weights.append(terms.weights[..., 0, :])
        outputs.append(probability(terms.logits))
    change = torch.cat(changes)
    print(
        f"permuted attention: {args.seeds} runs x {heldout.shape[0]} held-out x "
        f"{PERMUTATIONS} orders in {time.perf_counter() - started:.2f} s"
    )
    for run in (0, 1):
        print(
            f"  seed {run + 1}: median |dp| (median over examples) "
            f"{float(change[run].median()):.4f}"
        )
    started = time.perf_counter()
    divergence, distance = pair_divergence(
        torch.cat(weights), torch.cat(outputs), seed_pairs(args.seeds)
    )
    print(
        f"seed variance: {divergence.shape[0]} pairs x {heldout.shape[0]} held-out in "
        f"{time.perf_counter() - started:.2f} s; median JSD {float(divergence.median()):.4f}, "
        f"median TVD {float(distance.median()):.4f}"
    )
    for model in ("sink", "multihead"):
        kind_adversary(cfg, (inputs, labels), heldout, model, TRAINED)
    kind_adversary(cfg, (inputs, labels), heldout, "multihead", 5, heads=4)
    fixed_experiments(
        cfg,
        params,
        (inputs, labels),
        heldout,
        frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)[1],
    )
    for model in ("lesson", "window"):
        deceptive_experiment(cfg, frame, model)
    print(f"torch threads {torch.get_num_threads()}")


def kind_adversary(
    cfg, train_split, heldout, model: str, runs: int, heads: int | None = None
) -> None:
    """The exact adversary at eps 0.01 on `runs` trained runs of `model` (multihead: its
    default two heads, 3312 candidates per example, or `heads`), one run at a time and
    as memory.adversary_pass sizes the examples a pass."""
    cfg = validate(compose([f"model={model}", *([f"model.heads={heads}"] if heads else [])]))
    examples = adversary_pass(cfg.model, cfg.data.steps, 1, heldout.shape[0])[1]
    params = interface.init_params(
        cfg.data.seed, list(range(1, runs + 1)), cfg.model, cfg.data.steps
    )
    params = train(params, *train_split, cfg.train.epochs, cfg.train.lr)[0]
    started = time.perf_counter()
    found = [runs_adversary(part, heldout, 0.01, examples) for _, part in params.blocks(1)]
    maxima = torch.cat([f.max_jsd for f in found])
    name = f"{model} ({heads} heads)" if heads else model
    print(
        f"exact adversary, {name}, eps 0.01: {runs} runs x {heldout.shape[0]} held-out in "
        f"{time.perf_counter() - started:.2f} s; median max JSD {float(maxima.median()):.4f}"
    )


def deceptive_experiment(cfg, frame, model: str) -> None:
    """Deceptive attention (Pruthi et al.) on TRAINED runs of `model`."""
    cfg = validate(compose([f"model={model}"]))
    inputs, labels, marked = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    heldout, heldout_labels, heldout_marked = frames.split_tensors(
        cfg, frame, "heldout", "cpu", torch.float64
    )
    rows = [
        torch.tensor(rationale_rows(cfg.task.kind, m.tolist(), cfg.data.steps))
        for m in (marked, heldout_marked)
    ]
    start = interface.init_params(
        cfg.data.seed, list(range(1, TRAINED + 1)), cfg.model, cfg.data.steps
    )
    for penalty in PENALTIES:
        started = time.perf_counter()
        trained, history = train_deceptive(
            start, inputs, labels, rows[0], penalty, cfg.train.epochs, cfg.train.lr, check=False
        )
        finite = finite_runs(history.loss, trained)
        logits, weights = interface.forward(trained, heldout)
        held = accuracy(logits, heldout_labels)[finite]
        mass = rationale_mass(weights, rows[1]).mean(-1)[finite]
        diverged = [seed + 1 for seed in (~finite).nonzero().flatten().tolist()]
        print(
            f"deceptive attention, {model}, lam {penalty:g}: {TRAINED} runs in "
            f"{time.perf_counter() - started:.1f} s; held-out accuracy median "
            f"{float(held.median()):.4f}, weight on the rationale median "
            f"{float(mass.median()):.4f}; diverged (left out): {diverged or 'none'}"
        )


def fixed_experiments(cfg, params, train_set, heldout, heldout_labels) -> None:
    """Uniform and frozen attention (Wiegreffe & Pinter) on the first TRAINED runs."""
    inputs, labels = train_set
    seeds = list(range(1, TRAINED + 1))
    start = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps)
    learned = params.map(lambda t: t[:TRAINED])
    steps = cfg.data.steps
    started = time.perf_counter()
    uniform, _ = train_fixed(
        start, inputs, labels, uniform_weights(len(labels), steps), cfg.train.epochs, cfg.train.lr
    )
    uniform_accuracy = accuracy(
        fixed_logits(uniform, heldout, uniform_weights(heldout.shape[0], steps)), heldout_labels
    )
    frozen, _ = train_fixed(
        start,
        inputs,
        labels,
        step_weights(learned, inputs),
        cfg.train.epochs,
        cfg.train.lr,
    )
    frozen_accuracy = accuracy(
        fixed_logits(frozen, heldout, step_weights(learned, heldout)), heldout_labels
    )
    learned_accuracy = accuracy(interface.forward(learned, heldout)[0], heldout_labels)
    print(
        f"uniform and frozen attention: {TRAINED} runs each in "
        f"{time.perf_counter() - started:.1f} s"
    )
    for name, values in (
        ("learned", learned_accuracy),
        ("uniform", uniform_accuracy),
        ("frozen", frozen_accuracy),
    ):
        q = torch.quantile(values, torch.tensor([0.05, 0.5, 0.95], dtype=values.dtype))
        print(
            f"  {name:8} held-out accuracy: seeds 1, 2 {float(values[0]):.4f} "
            f"{float(values[1]):.4f}; over {TRAINED} seeds 5/50/95% "
            + " ".join(f"{float(v):.4f}" for v in q)
        )


if __name__ == "__main__":
    main()
