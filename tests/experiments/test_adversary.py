"""The exact adversary (pipeline.experiments.debate.adversary.py): hand-worked cases, and no
generic optimiser finds a feasible distribution further from the learned one."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from pipeline.experiments.debate.adversary import exact_adversary, jsd, logit_band
from pipeline.models.pooling import probability
from tests.conftest import composed


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def jsd_by_entropy(p, q) -> float:
    """JSD = H((p + q) / 2) - (H(p) + H(q)) / 2: the definition, not the code's form."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    return entropy((p + q) / 2) - (entropy(p) + entropy(q)) / 2


def solve(weights, readouts, bias, eps):
    """One head's answer: `weights` and `readouts` over the steps (T,)."""
    t = torch.tensor
    found = exact_adversary(
        t(weights, dtype=torch.float64)[None],
        t(readouts, dtype=torch.float64)[None],
        t(bias, dtype=torch.float64),
        eps,
    )
    return float(found.max_jsd), found.weights[0].numpy()


def test_jsd_is_the_entropy_definition_and_at_most_ln2():
    p, q = [0.7, 0.2, 0.1, 0.0], [0.0, 0.3, 0.3, 0.4]
    as_torch = float(
        jsd(torch.tensor(p, dtype=torch.float64), torch.tensor(q, dtype=torch.float64))
    )
    assert as_torch == pytest.approx(jsd_by_entropy(p, q), abs=1e-15)
    one, other = torch.eye(2, dtype=torch.float64)
    disjoint = float(jsd(one, other))
    assert disjoint == pytest.approx(math.log(2), abs=1e-15)


def test_two_steps_the_adversary_moves_to_the_edge_of_the_band():
    """a = (1/2, 1/2), r = (1, -1), b = 0: logit 2 lam - 1 for a' = (lam, 1 - lam), p =
    1/2 now, so |p' - 1/2| <= eps is |2 lam - 1| <= logit(1/2 + eps): lam at either end
    of the band, the same JSD by symmetry."""
    eps = 0.1
    lam = (1 + math.log(0.6 / 0.4)) / 2
    best, weights = solve([0.5, 0.5], [1.0, -1.0], 0.0, eps)
    assert best == pytest.approx(jsd_by_entropy([lam, 1 - lam], [0.5, 0.5]), abs=1e-14)
    assert sorted(weights) == pytest.approx([1 - lam, lam], abs=1e-14)


def test_a_step_that_moves_nothing_takes_all_the_mass():
    """r = (0, 0, 5), a = (0.45, 0.45, 0.1): the logit 0.5 now. All the mass on step 1
    gives logit 0, p down by sigmoid(0.5) - 1/2 = 0.1225 < eps: feasible, and the
    vertex furthest from a (steps 1 and 2 tie; the first is kept)."""
    best, weights = solve([0.45, 0.45, 0.1], [0.0, 0.0, 5.0], 0.0, 0.2)
    assert best == pytest.approx(jsd_by_entropy([1, 0, 0], [0.45, 0.45, 0.1]), abs=1e-14)
    assert weights.tolist() == [1.0, 0.0, 0.0]
    # A band too narrow for that vertex: the answer is an edge crossing, still in it.
    best, weights = solve([0.45, 0.45, 0.1], [0.0, 0.0, 5.0], 0.0, 0.05)
    logit = float(np.dot(weights, [0.0, 0.0, 5.0]))
    assert abs(1 / (1 + math.exp(-logit)) - 1 / (1 + math.exp(-0.5))) == pytest.approx(0.05)
    assert best < jsd_by_entropy([1, 0, 0], [0.45, 0.45, 0.1])


def test_the_band_is_infinite_where_it_reaches_past_the_clamp():
    lo, hi = logit_band(torch.tensor([0.0, 29.0, -40.0], dtype=torch.float64), 0.25)
    assert lo[0] == pytest.approx(math.log(0.25 / 0.75)) and hi[0] == -lo[0]
    assert hi[1] == math.inf and lo[2] == -math.inf


def test_no_optimiser_finds_a_feasible_distribution_further_away():
    """scipy's SLSQP from 40 random starts per case, on random cases: every feasible
    point it ends at is at most the exact maximum."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    for _case in range(12):
        steps = int(rng.integers(3, 8))
        weights = rng.dirichlet(np.full(steps, 0.5))
        readouts = rng.normal(0, 3, steps)
        bias, eps = float(rng.normal()), float(rng.choice([0.01, 0.05, 0.2]))
        best, adversary = solve(weights, readouts, bias, eps)
        p_now = float(probability(torch.tensor(weights @ readouts + bias)))

        def p_of(x, readouts=readouts, bias=bias):
            return float(probability(torch.tensor(x @ readouts + bias)))

        assert abs(p_of(adversary) - p_now) <= eps + 1e-12
        assert jsd_by_entropy(adversary, weights) == pytest.approx(best, abs=1e-12)
        constraints = [
            {"type": "eq", "fun": lambda x: x.sum() - 1},
            {"type": "ineq", "fun": lambda x, p=p_now, f=p_of, e=eps: e - abs(f(x) - p)},
        ]
        for start in rng.dirichlet(np.ones(steps), 40):
            found = minimize(
                lambda x, w=weights: -jsd_by_entropy(np.clip(x, 0, 1), w),
                start,
                method="SLSQP",
                bounds=[(0, 1)] * steps,
                constraints=constraints,
            )
            x = np.clip(found.x, 0, 1)
            x = x / x.sum()  # on the simplex exactly, then feasible or not
            if abs(p_of(x) - p_now) <= eps:
                assert jsd_by_entropy(x, weights) <= best + 1e-12


def test_a_batch_is_each_example_on_its_own():
    rng = np.random.default_rng(1)
    weights = torch.tensor(rng.dirichlet(np.ones(5), (3, 4, 2)))
    readouts = torch.tensor(rng.normal(0, 2, (3, 4, 2, 5)))
    bias = torch.tensor(rng.normal(0, 1, 3))[:, None]
    batched = exact_adversary(weights, readouts, bias, 0.05)
    for s in range(3):
        for n in range(4):
            one = exact_adversary(weights[s, n], readouts[s, n], bias[s, 0], 0.05)
            assert float(one.max_jsd) == float(batched.max_jsd[s, n])
            assert torch.equal(one.weights, batched.weights[s, n])


@pytest.fixture(scope="module")
def heldout():
    from pipeline.config import validate
    from pipeline.models import frames
    from pipeline.stages import generate

    cfg = validate(composed())
    frame, _ = generate.run(cfg)
    return cfg, frame, frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)[0]


def trained_runs(cfg, frame, *overrides):
    from pipeline.config import validate
    from pipeline.models import frames, interface
    from pipeline.models.train import train

    cfg = validate(composed(list(overrides)))
    inputs, labels, _ = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    params = interface.init_params(cfg.data.seed, [1, 2], cfg.model, cfg.data.steps)
    return train(params, inputs, labels, 40, cfg.train.lr)[0]


@pytest.mark.parametrize("heads", [2, 3, 4])
def test_heads_that_read_nothing_move_freely(heads):
    """Head 1 is the two-step case above (a = (1/2, 1/2), r = (1, -1)); every other
    head has a = (1/2, 1/2) and readouts 0, so it cannot move the output: all its mass
    goes on one step, JSD(e_0, u) = H(3/4, 1/4) - ln 2 / 2, whatever head 1 does. The
    adversary's JSD is the mean of the heads'."""
    eps = 0.1
    lam = (1 + math.log(0.6 / 0.4)) / 2
    half = [0.5, 0.5]
    found = exact_adversary(
        torch.tensor([half] * heads, dtype=torch.float64),
        torch.tensor([[1.0, -1.0]] + [[0.0, 0.0]] * (heads - 1), dtype=torch.float64),
        torch.tensor(0.0, dtype=torch.float64),
        eps,
    )
    first = jsd_by_entropy([lam, 1 - lam], half)
    second = jsd_by_entropy([1, 0], half)
    assert second == pytest.approx(0.75 * math.log(4 / 3) + 0.25 * math.log(4) - math.log(2) / 2)
    expected = (first + (heads - 1) * second) / heads
    assert float(found.max_jsd) == pytest.approx(expected, abs=1e-14)
    assert sorted(found.weights[0].tolist()) == pytest.approx([1 - lam, lam], abs=1e-14)
    for head in range(1, heads):
        assert sorted(found.weights[head].tolist()) == [0.0, 1.0]


def polytope_vertices(readouts: np.ndarray, lo: float, hi: float) -> list[np.ndarray]:
    """By brute force, every vertex of the product of simplices cut by lo <= sum_h
    r_h . a_h <= hi: each head at a vertex of its simplex inside the slab, or one head
    on an edge where it meets a face, the others at vertices."""
    heads, steps = readouts.shape
    eye = np.eye(steps)
    found = []
    for corners in itertools.product(range(steps), repeat=heads):
        point = eye[list(corners)]
        if lo <= (point * readouts).sum() <= hi:
            found.append(point)
        for head, (i, j) in itertools.product(
            range(heads), itertools.combinations(range(steps), 2)
        ):
            rest = sum(readouts[h, corners[h]] for h in range(heads) if h != head)
            r_i, r_j = readouts[head, i], readouts[head, j]
            for face in (lo, hi):
                if r_i == r_j or not np.isfinite(face):
                    continue
                lam = (face - rest - r_j) / (r_i - r_j)
                if 0 <= lam <= 1:
                    edge = point.copy()
                    edge[head] = lam * eye[i] + (1 - lam) * eye[j]
                    found.append(edge)
    return found


@pytest.mark.parametrize("heads", [1, 2, 3])
def test_the_largest_jsd_is_the_best_vertex_of_the_polytope(heads):
    """The enumeration, with the crossings it skips by their bound, finds the largest
    mean JSD over every vertex listed by brute force."""
    rng = np.random.default_rng(10 + heads)
    for _case in range(10):
        steps = int(rng.integers(2, 5))
        weights = rng.dirichlet(np.full(steps, 0.5), heads)
        readouts = rng.normal(0, 3, (heads, steps))
        bias, eps = float(rng.normal()), float(rng.choice([0.01, 0.05, 0.2]))
        t = torch.tensor
        found = exact_adversary(t(weights), t(readouts), t(bias, dtype=torch.float64), eps)
        lo, hi = logit_band(t((weights * readouts).sum() + bias), eps)
        vertices = polytope_vertices(readouts, float(lo) - bias, float(hi) - bias)
        best = max(
            sum(jsd_by_entropy(v[h], weights[h]) for h in range(heads)) / heads for v in vertices
        )
        assert float(found.max_jsd) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("heads, cases, largest", [(2, 8, 6), (3, 6, 4), (4, 3, 4)])
def test_no_optimiser_beats_several_heads(heads, cases, largest):
    """The product of simplices cut by the slab: SLSQP over every head at once, from
    30 random starts per case, never ends at a feasible point further away (in the
    mean of the heads' JSDs) than the enumeration."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(heads)
    for _case in range(cases):
        steps = int(rng.integers(2, largest))
        weights = rng.dirichlet(np.full(steps, 0.5), heads)
        readouts = rng.normal(0, 3, (heads, steps))
        bias, eps = float(rng.normal()), float(rng.choice([0.01, 0.05, 0.2]))
        t = torch.tensor
        found = exact_adversary(t(weights), t(readouts), t(bias, dtype=torch.float64), eps)
        best, adversary = float(found.max_jsd), found.weights.numpy()

        def p_of(x, readouts=readouts, bias=bias):
            return float(probability(torch.tensor((x * readouts).sum() + bias)))

        def mean_jsd(x, w=weights):
            return sum(jsd_by_entropy(x[h], w[h]) for h in range(len(w))) / len(w)

        p_now = p_of(weights)
        assert abs(p_of(adversary) - p_now) <= eps + 1e-12
        assert mean_jsd(adversary) == pytest.approx(best, abs=1e-12)
        constraints = [
            {"type": "eq", "fun": lambda x, h=h, s=steps: x[h * s : (h + 1) * s].sum() - 1}
            for h in range(heads)
        ]
        constraints.append(
            {"type": "ineq", "fun": lambda x, p=p_now, s=steps, e=eps:
                e - abs(p_of(x.reshape(-1, s)) - p)}
        )  # fmt: skip
        starts = np.concatenate([rng.dirichlet(np.ones(steps), 30) for _ in range(heads)], 1)
        for start in starts:
            result = minimize(
                lambda x, s=steps: -mean_jsd(np.clip(x, 0, 1).reshape(-1, s)),
                start,
                method="SLSQP",
                bounds=[(0, 1)] * (heads * steps),
                constraints=constraints,
            )
            x = np.clip(result.x, 0, 1).reshape(heads, steps)
            x = x / x.sum(-1, keepdims=True)
            if abs(p_of(x) - p_now) <= eps:
                assert mean_jsd(x) <= best + 1e-12


@pytest.mark.parametrize(
    "kind",
    ["model=lesson", "model=posenc", "model=window", "model=multihead"],
    ids=["lesson", "posenc", "window", "multihead"],
)
def test_every_kind_s_adversary_keeps_its_output(heldout, kind):
    from pipeline.experiments.debate.adversary import runs_adversary
    from pipeline.models import interface

    cfg, frame, inputs = heldout
    params = trained_runs(cfg, frame, kind)
    logits, weights, readouts = interface.kind(params.cfg.kind).attend(params, inputs)
    bias = logits - (weights * readouts).sum((-2, -1))
    assert torch.allclose(bias, params.named["b"][:, None].expand_as(bias), atol=1e-12)
    for eps in (0.01, 0.05):
        found = runs_adversary(params, inputs, eps)
        moved = (found.weights * readouts).sum((-2, -1)) + bias
        assert (probability(moved) - probability(logits)).abs().max() <= eps + 1e-12
        assert found.max_jsd.min() >= 0 and found.max_jsd.max() <= math.log(2)
        assert torch.allclose(found.weights.sum(-1), torch.ones(()).double())
        assert torch.allclose(found.max_jsd, jsd(found.weights, weights).mean(-1))


def test_examples_a_pass_change_no_number(heldout):
    """Past one run of every example (four heads), the adversary goes a few examples a
    pass: each example is solved on its own, so the blocks give the same bytes."""
    from pipeline.experiments.debate.adversary import runs_adversary

    cfg, frame, inputs = heldout
    params = trained_runs(cfg, frame, "model=multihead")
    whole = runs_adversary(params, inputs, 0.05)
    blocks = runs_adversary(params, inputs, 0.05, examples=7)
    assert torch.equal(whole.max_jsd, blocks.max_jsd)
    assert torch.equal(whole.weights, blocks.weights)


def test_the_sink_s_adversary_moves_mass_through_its_value_less_slot(heldout):
    """The sink is one more slot, readout 0: the adversary's distribution over the
    steps and the sink keeps the output, its JSD is against the weights with the sink,
    and no optimiser over that larger simplex does better on a run's examples."""
    from scipy.optimize import minimize

    from pipeline.experiments.debate.adversary import runs_adversary
    from pipeline.models import interface

    cfg, frame, inputs = heldout
    params = trained_runs(cfg, frame, "model=sink")
    logits, weights, readouts = interface.kind("sink").attend(params, inputs)
    weights, readouts = weights[..., 0, :], readouts[..., 0, :]
    sink = 1 - weights.sum(-1, keepdim=True)
    assert float(sink.min()) > 0  # the trained sink holds some of the mass
    bias = logits - (weights * readouts).sum(-1)
    eps = 0.05
    found = runs_adversary(params, inputs, eps)
    assert found.weights.shape == (*weights.shape[:-1], 1, weights.shape[-1] + 1)
    with_sink = found.weights[..., 0, :]
    moved = (with_sink[..., :-1] * readouts).sum(-1) + bias  # the sink's slot reads 0
    assert (probability(moved) - probability(logits)).abs().max() <= eps + 1e-12
    assert float(with_sink.min()) >= 0
    assert torch.allclose(found.max_jsd, jsd(with_sink, torch.cat([weights, sink], -1)))
    for n in range(0, 180, 45):  # a few examples of run 1 against scipy from random starts
        a = torch.cat([weights[0, n], sink[0, n]]).numpy()
        r = torch.cat([readouts[0, n], torch.zeros(1, dtype=torch.float64)]).numpy()
        b, p = float(bias[0, n]), float(probability(logits[0, n]))

        def in_band(x, r=r, b=b, p=p):
            return eps - abs(float(probability(torch.tensor(x @ r + b))) - p)

        rng = np.random.default_rng(n)
        for start in rng.dirichlet(np.ones(len(a)), 5):
            result = minimize(
                lambda x, a=a: -jsd_by_entropy(np.clip(x, 0, 1), a),
                start,
                method="SLSQP",
                bounds=[(0, 1)] * len(a),
                constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1},
                             {"type": "ineq", "fun": in_band}],
            )  # fmt: skip
            if result.success and in_band(result.x) >= -1e-9:
                assert -result.fun <= float(found.max_jsd[0, n]) + 1e-7


def test_more_heads_than_the_enumeration_covers_are_refused_by_name(heldout):
    from pipeline.core.errors import ConfigError
    from pipeline.experiments.debate.adversary import MAX_HEADS, runs_adversary

    cfg, frame, inputs = heldout
    params = trained_runs(cfg, frame, "model=multihead", f"model.heads={MAX_HEADS + 1}")
    with pytest.raises(ConfigError, match=f"model.heads={MAX_HEADS + 1}: .* at most {MAX_HEADS}"):
        runs_adversary(params, inputs, 0.01)


def test_the_candidates_per_example_count_vertices_and_crossings():
    from pipeline.memory import candidate_count

    assert candidate_count(12, 1) == 12 + 12 * 11  # the lesson: vertices, two faces per pair
    assert candidate_count(12, 2) == 3312
