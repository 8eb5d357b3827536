"""One cell of the attention debate (reports/debate/<task>-<variant>.json): every
paper's test on one task and one model variant, against the task's true rationale.

The runs are the grid's (pipeline/experiments/grid/cell.py): the lesson's data, held-out
split and init streams, trained with grid.epochs and grid.lr. Tests that read
trained runs (the exact adversary, permuted attention, seed variance) use
debate.seeds of them; tests that train runs of their own (uniform, frozen and
deceptive attention) use the first debate.trained_seeds, from the same inits.
Per-seed numbers are summarised over seeds (`stats.describe`: median, 5% and 95%
quantiles), with the 95% bootstrap interval of their mean over seeds. A per-seed
median over the held-out examples is torch's (for an even count, the lower of the
two middle values: a value the run has, the same on any machine).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from pipeline import data
from pipeline.analysis import faithfulness, sanity, seed_study, stats
from pipeline.config import Config
from pipeline.config.cells import cell_config
from pipeline.core import ties
from pipeline.core.errors import DivergenceError
from pipeline.core.processes import map_large_blocks
from pipeline.core.ranking import hit_at_1
from pipeline.experiments.debate.adversary import jsd, runs_adversary
from pipeline.experiments.debate.consistent import adversary_start, train_consistent
from pipeline.experiments.debate.deception import rationale_mass, train_deceptive
from pipeline.experiments.debate.fixed_attention import step_weights, train_fixed, uniform_weights
from pipeline.experiments.debate.permutation import permutation_orders, permuted_output_change
from pipeline.experiments.debate.pooling import fixed_logits, pooling_terms, with_sink_slot
from pipeline.experiments.debate.seed_variance import pair_divergence, seed_pairs
from pipeline.memory import DEBATE_RUNS, adversary_pass
from pipeline.models import frames, interface
from pipeline.models.parameters import Params, cat_runs
from pipeline.models.pooling import probability
from pipeline.models.threads import run_jobs, workers
from pipeline.models.train import History, accuracy, device_and_dtype, finite_runs

RUN_CHUNK = DEBATE_RUNS  # runs per pass of the adversary and the permutations
# Jain & Wallace's reading: a distribution this far (JSD, natural log) that keeps the
# output within eps "explains" the output as well as the learned one.
FAR_JSD = 0.5
# Pruthi et al. ask whether other explainers still find what the attention hides.
EXPLAINERS_ASKED = ("attention", "loo", "gradient", "integrated_gradients")


def seed_summary(per_seed: torch.Tensor, cfg: Config) -> dict:
    """A per-seed number (S,) over seeds: its spread and the 95% bootstrap interval of
    its mean (study.bootstrap resamples of the seeds, from study.bootstrap_seed)."""
    per_seed = stats.on_host(per_seed)
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    counts = stats.resample_counts(len(per_seed), cfg.study.bootstrap, generator)
    means = counts @ per_seed / len(per_seed)
    low, high = stats.interval(means)
    return {**stats.describe(per_seed), "mean_interval": [low, high]}


def in_chunks(params: Params, work, runs: int = RUN_CHUNK) -> list:
    """`work` on `runs` runs at a time."""
    return [work(part) for _, part in params.blocks(runs)]


def adversary_numbers(
    params: Params,
    inputs: torch.Tensor,
    rationale: torch.Tensor,
    largest: torch.Tensor,
    eps: float,
    cfg: Config,
) -> dict:
    """Experiment 1: per seed, the median over held-out examples of the largest JSD
    within eps, the share of examples where JSD >= FAR_JSD keeps the output, and the
    adversary's mean weight on the rationale beside the model's; over every (run,
    example), the median largest JSD by the learned largest weight (`largest`, (S, N))."""
    runs, examples = adversary_pass(params.cfg, inputs.shape[1], params.runs, inputs.shape[0])
    found = in_chunks(params, lambda part: runs_adversary(part, inputs, eps, examples), runs)
    max_jsd = torch.cat([f.max_jsd for f in found])
    steps = rationale.shape[-1]
    adversary_mass = torch.cat(
        [rationale_mass(f.weights[..., :steps].mean(-2), rationale) for f in found]
    )
    far = ~ties.below(max_jsd, FAR_JSD)  # at least FAR_JSD, a near-tie included
    return {
        "eps": eps,
        "median_max_jsd": seed_summary(max_jsd.median(-1).values, cfg),
        "share_far": seed_summary(far.to(torch.float64).mean(-1), cfg),
        "adversary_rationale_weight": seed_summary(adversary_mass.mean(-1), cfg),
        "per_seed_median_max_jsd": max_jsd.median(-1).values.tolist(),
        "binned": binned_median(max_jsd, largest),
    }


def permutation_numbers(params: Params, inputs: torch.Tensor, cfg: Config) -> dict:
    """Experiment 2: per seed, the median over examples of the median |dp| over
    debate.permutations orders, and the share of examples whose largest weight is at
    least 0.5; over every (run, example), the median |dp| by largest weight."""
    settings = cfg.debate
    orders = permutation_orders(
        inputs.shape[0], settings.permutations, cfg.data.steps, settings.permutation_seed
    ).to(inputs.device)  # drawn on the CPU: the same orders on every device

    def changes(part: Params) -> tuple[torch.Tensor, torch.Tensor]:
        terms = pooling_terms(part, inputs)
        steps = terms.steps
        weights, readouts = terms.weights[..., :steps], terms.readouts[..., :steps]
        moved = permuted_output_change(weights, readouts, terms.bias, orders)
        return moved, weights.mean(-2).amax(-1)

    moved, largest = (torch.cat(parts) for parts in zip(*in_chunks(params, changes), strict=True))
    peaked = ~ties.below(largest, 0.5)
    return {
        "permutations": settings.permutations,
        "median_output_change": seed_summary(moved.median(-1).values, cfg),
        "share_peaked": seed_summary(peaked.to(torch.float64).mean(-1), cfg),
        "binned": binned_median(moved, largest),
    }


def binned_median(values: torch.Tensor, largest: torch.Tensor, bins: int = 5) -> list[dict]:
    """The median of `values` over the (run, example) pairs whose largest weight falls
    in each of `bins` equal bins of [0, 1], an edge (within a tie) in the bin above
    it: Jain & Wallace's figures 3 and 4 (against the largest weight) as tables."""
    edges = [b / bins for b in range(bins + 1)]
    which = sum((~ties.below(largest.flatten(), edge)).long() for edge in edges[1:-1])
    rows = []
    for b in range(bins):
        inside = values.flatten()[which == b]
        rows.append(
            {
                "largest_weight": [edges[b], edges[b + 1]],
                "pairs": int(inside.numel()),
                "median": float(inside.median()) if inside.numel() else None,
            }
        )
    return rows


def seed_variance_numbers(params: Params, inputs: torch.Tensor) -> dict:
    """Experiment 4: JSD between the weights of disjoint pairs of seeds on the same
    example, and the TVD between their outputs (over every pair and example, and
    each pair's mean): the background for an adversary."""

    def terms(part: Params) -> tuple[torch.Tensor, torch.Tensor]:
        logits, weights = interface.forward(part, inputs)
        return with_sink_slot(weights, part.cfg), probability(logits)

    weights, outputs = (torch.cat(parts) for parts in zip(*in_chunks(params, terms), strict=True))
    divergence, distance = pair_divergence(weights, outputs, seed_pairs(params.runs))
    return {
        "pairs": int(divergence.shape[0]),
        # Each pair's held-out means: the cloud an adversary is read against.
        "per_pair_jsd": divergence.mean(-1).tolist(),
        "per_pair_tvd": distance.mean(-1).tolist(),
        "jsd": stats.describe(divergence.flatten()),
        "tvd": stats.describe(distance.flatten()),
    }


Job = tuple[list[tuple[str, float]], Callable[[], tuple[Params, History]]]


def trainings(
    start: Params,
    learned: Params,
    train_split: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    cfg: Config,
) -> list[Job]:
    """Every training of the cell, one job per experiment over all its settings' runs,
    each setting's the next trained_seeds of them, with its (experiment, lam) keys: the
    consistent adversary's at each lam, deception's (lam = 0 is the learned runs, not
    trained again), uniform and frozen attention (experiments 6, 7, 3 and 5). One
    training of 30 runs costs about two thirds of three of 10 (window3, 2 cores)."""
    inputs, labels, rationale = train_split
    epochs, lr = cfg.train.epochs, cfg.train.lr

    def each_run(lams: list[float]) -> torch.Tensor:
        """Every setting's lam on each of its runs."""
        values = torch.tensor(lams, dtype=inputs.dtype, device=inputs.device)
        return values.repeat_interleave(learned.runs)

    consistent = list(cfg.debate.consistent_penalties)
    adversary = adversary_start(learned, start, cfg.debate.consistent_start)
    adversaries, bases = (cat_runs([runs] * len(consistent)) for runs in (adversary, learned))
    lams = each_run(consistent)
    job = partial(train_consistent, adversaries, inputs, labels, bases, lams, epochs, lr)
    jobs = [([("consistent", lam) for lam in consistent], job)]
    deceptive = [lam for lam in cfg.debate.penalties if lam]
    if deceptive:
        starts, lams = cat_runs([start] * len(deceptive)), each_run(deceptive)
        job = partial(train_deceptive, starts, inputs, labels, rationale, lams, epochs, lr, False)
        jobs.append(([("deceptive", lam) for lam in deceptive], job))
    frozen = step_weights(learned, inputs)  # (S, N, H, T)
    uniform = uniform_weights(len(labels), cfg.data.steps).to(frozen).expand_as(frozen)
    fixed = torch.cat([uniform, frozen])
    job = partial(train_fixed, cat_runs([start, start]), inputs, labels, fixed, epochs, lr)
    jobs.append(([("uniform", 0.0), ("frozen", 0.0)], job))
    return jobs


def train_all(jobs: list[Job]) -> dict:
    """Each (experiment, lam)'s trained runs and history: the jobs on threads of our
    own, torch's ops on one thread in each (pipeline/models/threads.py). The cell's
    small autograd steps gain little from torch's own threads and pay to wake them: on
    2 cores, the lesson x window3 cell's trainings and deception's battery took 33 s on
    torch's two threads, 19 s on one."""
    results = run_jobs([job for _, job in jobs], workers(len(jobs)))
    trained = {}
    for (keys, _), (params, history) in zip(jobs, results, strict=True):
        size = params.runs // len(keys)
        for index, key in enumerate(keys):
            mine = slice(index * size, (index + 1) * size)
            part = History(history.loss[:, mine], history.accuracy[:, mine])
            trained[key] = (params.map(lambda t, mine=mine: t[mine]), part)
    return trained


def fixed_numbers(
    trained: dict,
    learned: Params,
    heldout: tuple[torch.Tensor, torch.Tensor],
    cfg: Config,
) -> dict:
    """Experiments 3 and 5: held-out accuracy with the pooling weights fixed, uniform
    (a_t = 1/T) or frozen from the learned run, the rest trained from the same init;
    beside the learned model's."""
    held, held_labels = heldout
    (uniform, _), (frozen, _) = trained["uniform", 0.0], trained["frozen", 0.0]
    held_uniform = uniform_weights(held.shape[0], cfg.data.steps).to(held)
    accuracies = {
        "learned": accuracy(interface.forward(learned, held)[0], held_labels),
        "uniform": accuracy(fixed_logits(uniform, held, held_uniform), held_labels),
        "frozen": accuracy(fixed_logits(frozen, held, step_weights(learned, held)), held_labels),
    }
    return {name: seed_summary(values, cfg) for name, values in accuracies.items()}


def diverged(seeds: list[int], finite: torch.Tensor, experiment: str, penalty: float) -> list[int]:
    """The seeds of the runs that are not `finite` (S,); none left to summarise is
    refused (`train.lr` is grid.lr in a cell)."""
    if not bool(finite.any()):
        raise DivergenceError(
            f"{experiment} at lam {penalty}: all {len(seeds)} runs reached NaN or inf; "
            "lower grid.lr or that lam"
        )
    return [seeds[i] for i in (~finite).nonzero().flatten().tolist()]


def rationale_hits(
    params: Params, inputs: torch.Tensor, rationale: torch.Tensor, cfg: Config
) -> dict[str, torch.Tensor]:
    """Per run (S,), the faithfulness battery's hit@1 against the rationale of each of
    EXPLAINERS_ASKED: only the scores (`sanity.scores`: the battery's chunks on our
    threads) and that metric, not the battery's removal curves."""
    names = list(EXPLAINERS_ASKED)
    scores = sanity.scores(params, inputs, names, cfg)
    return {name: hit_at_1(scores[name], rationale).mean(-1) for name in names}


def deception_numbers(
    trained: dict,
    learned: Params,
    seeds: list[int],
    heldout: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    cfg: Config,
) -> list[dict]:
    """Experiment 7: per lam, held-out accuracy and the weight on the rationale of
    runs trained with Pruthi et al.'s penalty; runs that diverged are named and left
    out (a large lam can push a run off). Beside the attention, whether LOO, the
    gradient and integrated gradients still find the rationale: their hit@1 against
    it (the faithfulness battery's). lam = 0 is the ordinary run (the learned
    runs, `learned`: tests/experiments/test_deception.py checks that training with lam = 0 gives
    their parameters within 1e-10)."""
    held, held_labels, held_rationale = heldout
    runs = []
    for penalty in cfg.debate.penalties:
        if penalty == 0:
            runs.append((penalty, learned, torch.ones(learned.runs, dtype=torch.bool)))
        else:
            params, history = trained["deceptive", penalty]
            runs.append((penalty, params.map(torch.nan_to_num), finite_runs(history.loss, params)))
    # Every lam's runs in one pass of the explainers, their chunks on our threads.
    hits = rationale_hits(cat_runs([params for _, params, _ in runs]), held, held_rationale, cfg)
    rows = []
    for index, (penalty, params, finite) in enumerate(runs):
        logits, weights = interface.forward(params, held)
        mine = slice(index * len(seeds), (index + 1) * len(seeds))
        rows.append(
            {
                "penalty": penalty,
                "diverged_seeds": diverged(seeds, finite, "deceptive attention", penalty),
                "heldout_accuracy": seed_summary(accuracy(logits, held_labels)[finite], cfg),
                "rationale_weight": seed_summary(
                    rationale_mass(weights, held_rationale).mean(-1)[finite], cfg
                ),
                "hit_at_1": {
                    name: seed_summary(hits[name][mine][finite], cfg) for name in EXPLAINERS_ASKED
                },
            }
        )
    return rows


def consistent_numbers(
    trained: dict,
    learned: Params,
    seeds: list[int],
    heldout: tuple[torch.Tensor, torch.Tensor],
    cfg: Config,
) -> list[dict]:
    """Experiment 6: per lam, models of the same kind trained to match the base runs'
    predictions with attention far from theirs; per seed, the held-out mean TVD and
    JSD against the base run, and the held-out accuracy. Runs that diverged are named
    and left out.

    Each adversary starts debate.consistent_start of the way from its base run to that
    run's init (`consistent.adversary_start`). Wiegreffe & Pinter train theirs from
    scratch (1); at the lesson's 200 epochs and lr 0.6, models trained from the init
    on this loss stayed at a held-out TVD of 0.26 even at lam 0.01 (measured on the
    lesson's first 10 runs), so the curve would show the budget, not what attention
    can do."""
    held, held_labels = heldout
    base_logits, base_weights = interface.forward(learned, held)
    base_weights = with_sink_slot(base_weights, cfg.model)
    rows = []
    for penalty in cfg.debate.consistent_penalties:
        params, history = trained["consistent", penalty]
        finite = finite_runs(history.loss, params)
        logits, weights = interface.forward(params.map(torch.nan_to_num), held)
        distance = (probability(logits) - probability(base_logits)).abs().mean(-1)
        rows.append(
            {
                "penalty": penalty,
                "diverged_seeds": diverged(seeds, finite, "the consistent adversary", penalty),
                "tvd": seed_summary(distance[finite], cfg),
                "jsd": seed_summary(
                    jsd(with_sink_slot(weights, cfg.model), base_weights).mean(-1)[finite], cfg
                ),
                "heldout_accuracy": seed_summary(accuracy(logits, held_labels)[finite], cfg),
            }
        )
    return rows


def run_cell(cfg: Config, task: str, variant: str) -> dict:
    """One cell's document (reports/debate/<task>-<variant>.json)."""
    cell = cell_config(cfg, task, variant, cfg.grid)  # trained as the grid's cells
    settings = cfg.debate
    device, dtype = device_and_dtype(cell.train)
    frame = data.generate(cell.data, task)
    inputs, labels, marked = frames.split_tensors(cell, frame, "train", device, dtype)
    held, held_labels, held_marked = frames.split_tensors(cell, frame, "heldout", device, dtype)
    rationale = faithfulness.task_rationale(task, marked, cell.data.steps)
    held_rationale = faithfulness.task_rationale(task, held_marked, cell.data.steps)
    seeds = list(range(1, settings.seeds + 1))
    runs = seed_study.train_seeds(cell, frame, seeds, heldout_only=True)
    map_large_blocks()  # the tests' peak: what they hold, however the heap would fragment
    params = interface.from_flat(runs.params.to(held), cell.model, cell.data.steps)
    trained = seeds[: settings.trained_seeds]
    start = interface.init_params(cell.data.seed, trained, cell.model, cell.data.steps)
    start = start.map(lambda t: t.to(held))
    learned = params.map(lambda t: t[: len(trained)])
    weights = torch.cat(in_chunks(params, lambda part: interface.forward(part, held)[1]))
    trained_runs = train_all(trainings(start, learned, (inputs, labels, rationale), cell))
    return {
        "task": task,
        "variant": variant,
        "seeds": len(seeds),
        "trained_seeds": len(trained),
        "learned_rationale_weight": seed_summary(
            rationale_mass(weights, held_rationale).mean(-1), cfg
        ),
        "adversary": [
            adversary_numbers(params, held, held_rationale, weights.amax(-1), eps, cfg)
            for eps in settings.epsilons
        ],
        "permutation": permutation_numbers(params, held, cell),
        "seed_variance": seed_variance_numbers(params, held),
        "fixed_attention": fixed_numbers(trained_runs, learned, (held, held_labels), cell),
        "consistent_adversary": consistent_numbers(
            trained_runs, learned, trained, (held, held_labels), cell
        ),
        "deception": deception_numbers(
            trained_runs, learned, trained, (held, held_labels, held_rationale), cell
        ),
    }
