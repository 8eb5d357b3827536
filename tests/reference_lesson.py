"""An independent oracle: the lesson's pure-Python code (seed 004), ported to English names.

Plain Python floats and lists, no torch, no pipeline imports: the tests compare the
pipeline against this port. The statements keep the seed's structure and its order
of floating-point operations (per-example sums accumulated over the training set,
divided by n at the end of each epoch), only the names are English and the lesson's
module constants (seed, 720 sequences, 12 steps, 360/180/180, 200 epochs, lr 0.6)
became parameters. d_k = d_v = 3 as in the lesson.

It is slow (about 18 s for the full lesson): tests use it on small configs only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

SEED = 20260218  # seed 004: TOHUM
MASK32 = 0xFFFFFFFF  # seed 004: M32
STEPS = 12  # seed 004: ADIM
THRESHOLD = 0.35
# seed 004: BOLGE = kuzey, guney, dogu, bati, merkez (the third number is unused there).
REGIONS = [
    ("north", 0.28, 21),
    ("south", 0.22, 17),
    ("east", 0.18, 26),
    ("west", 0.14, 14),
    ("centre", 0.18, 23),
]
D_K = D_V = 3  # seed 004: DK = DV = 3
SCALE = 1.0 / math.sqrt(D_K)  # seed 004: OL
INIT_SCALE = 0.9


def stream(t: int) -> Callable[[], float]:
    """seed 004: uretec(t) -> sonraki."""
    x = ((t ^ (t >> 16)) * 2246822507) & MASK32
    x = ((x ^ (x >> 13)) * 3266489909) & MASK32
    s = [(x ^ (x >> 16)) & MASK32]

    def next_uniform() -> float:
        s[0] = (s[0] * 1664525 + 1013904223) & MASK32
        return s[0] / 4294967296

    return next_uniform


def pick(u: float, w: list[float]) -> int:
    """seed 004: ayrik(u, w)."""
    t = 0.0
    for i, x in enumerate(w):
        t += x
        if u < t:
            return i
    return len(w) - 1


def build_sequences(n: int, seed: int = SEED, steps: int = STEPS) -> list[dict]:
    """seed 004: dizi_kur(n, tohum); keys oku/isaret/y/bolge -> readings/marked/label/region."""
    out = []
    for i in range(n):
        r = stream(seed + i)
        b = REGIONS[pick(r(), [x[1] for x in REGIONS])]
        readings = [0.0] + [round((r() + r() + r() - 1.5) * 1.9, 3) for _ in range(steps - 1)]
        m = 2 + int(r() * (steps - 2))
        out.append(
            {
                "readings": readings,
                "marked": m,
                "label": 1 if readings[m] > THRESHOLD else 0,
                "region": b[0],
            }
        )
    return out


Example = tuple[list[list[float]], int, int]  # (X, y, marked step); seed 004: GIR entries


def model_inputs(sequences: list[dict]) -> list[Example]:
    """seed 004: GIR = [([[oku[t], 1.0 if t == isaret else 0.0] ...], y, isaret)]."""
    return [
        (
            [
                [x["readings"][t], 1.0 if t == x["marked"] else 0.0]
                for t in range(len(x["readings"]))
            ],
            x["label"],
            x["marked"],
        )
        for x in sequences
    ]


def forward(P: dict, X: list[list[float]], skip: int | None = None):
    """seed 004: ileri(P, X, atla) -> (K, V, a, c, logit)."""
    steps = len(X)
    K = [[P["Wk"][i][0] * x[0] + P["Wk"][i][1] * x[1] for i in range(D_K)] for x in X]
    V = [[P["Wv"][i][0] * x[0] + P["Wv"][i][1] * x[1] for i in range(D_V)] for x in X]
    s = [sum(P["q"][i] * k[i] for i in range(D_K)) * SCALE for k in K]
    d = [t for t in range(steps) if t != skip]
    mx = max(s[t] for t in d)
    e = [math.exp(s[t] - mx) if t in d else 0.0 for t in range(steps)]
    z = sum(e)
    a = [u / z for u in e]
    c = [sum(a[t] * V[t][i] for t in d) for i in range(D_V)]
    return K, V, a, c, sum(P["w"][i] * c[i] for i in range(D_V)) + P["b"]


def init(seed: int, scale: float = INIT_SCALE) -> dict:
    """seed 004: the first lines of egit(tohum): Wk, Wv row-major, q, w, then b = 0."""
    r = stream(seed)

    def g() -> float:
        return (r() + r() + r() - 1.5) * scale

    return {
        "Wk": [[g(), g()] for _ in range(D_K)],
        "Wv": [[g(), g()] for _ in range(D_V)],
        "q": [g() for _ in range(D_K)],
        "w": [g() for _ in range(D_V)],
        "b": 0.0,
    }


def train(
    seed: int,
    examples: list[Example],
    epochs: int = 200,
    lr: float = 0.6,
    init_scale: float = INIT_SCALE,
) -> dict:
    """seed 004: egit(tohum, tur, adim) with its hand gradients, on `examples` (EG there).

    `init_scale` is the lesson's 0.9 unless a test asks for larger starting values.
    """
    P = init(seed, init_scale)
    for _ in range(epochs):
        gWk = [[0.0, 0.0] for _ in range(D_K)]
        gWv = [[0.0, 0.0] for _ in range(D_V)]
        gq, gw, gb = [0.0] * D_K, [0.0] * D_V, 0.0
        for X, y, _m in examples:
            steps = len(X)
            K, V, a, c, o = forward(P, X)
            d = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, o)))) - y
            for i in range(D_V):
                gw[i] += d * c[i]
            gb += d
            da = [sum(d * P["w"][i] * V[t][i] for i in range(D_V)) for t in range(steps)]
            mean_da = sum(a[t] * da[t] for t in range(steps))  # seed 004: orta
            for t in range(steps):
                ds = a[t] * (da[t] - mean_da) * SCALE
                for i in range(D_K):
                    gq[i] += ds * K[t][i]
                    gWk[i][0] += ds * P["q"][i] * X[t][0]
                    gWk[i][1] += ds * P["q"][i] * X[t][1]
                for i in range(D_V):
                    gWv[i][0] += d * a[t] * P["w"][i] * X[t][0]
                    gWv[i][1] += d * a[t] * P["w"][i] * X[t][1]
        n = len(examples)
        for i in range(D_K):
            P["q"][i] -= lr * gq[i] / n
            P["Wk"][i][0] -= lr * gWk[i][0] / n
            P["Wk"][i][1] -= lr * gWk[i][1] / n
        for i in range(D_V):
            P["w"][i] -= lr * gw[i] / n
            P["Wv"][i][0] -= lr * gWv[i][0] / n
            P["Wv"][i][1] -= lr * gWv[i][1] / n
        P["b"] -= lr * gb / n
    return P


def flat(P: dict) -> list[float]:
    """Parameters in the lesson's init order: Wk row-major, Wv row-major, q, w, b."""
    return [
        *(v for row in P["Wk"] for v in row),
        *(v for row in P["Wv"] for v in row),
        *P["q"],
        *P["w"],
        P["b"],
    ]


def accuracy(P: dict, G: list[Example]) -> float:
    """seed 004: dogruluk(P, G)."""
    return sum((forward(P, X)[4] > 0) == (y == 1) for X, y, _ in G) / len(G)


def attention_measures(P: dict, G: list[Example]) -> tuple[float, float]:
    """seed 004: dikkat_olcu(P, G) -> (marker mass, argmax hit); Python max: first max wins."""
    mass, hits = 0.0, 0
    for X, _y, m in G:
        a = forward(P, X)[2]
        mass += a[m]
        hits += max(range(len(X)), key=lambda t: a[t]) == m
    return mass / len(G), hits / len(G)


def probability(P: dict, X: list[list[float]], skip: int | None = None) -> float:
    """seed 004: olasilik(P, X, atla)."""
    o = forward(P, X, skip)[4]
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, o))))


def step_effects(P: dict, X: list[list[float]]) -> list[float]:
    """seed 004: the `etki` list inside nedensellik: |P(y=1 | step t skipped) - P(y=1)|."""
    p0 = probability(P, X)
    return [abs(probability(P, X, t) - p0) for t in range(len(X))]


def causality(P: dict, G: list[Example], threshold: float = 0.05):
    """seed 004: nedensellik(P, G, esik) -> (agreement, top-weight effect, high, high & low)."""
    agree, high, high_low, top_effect = 0, 0, 0, 0.0
    for X, _y, _m in G:
        steps = len(X)
        a = forward(P, X)[2]
        effects = step_effects(P, X)
        ta = max(range(steps), key=lambda t: a[t])
        agree += ta == max(range(steps), key=lambda t: effects[t])
        top_effect += effects[ta]
        if a[ta] > 0.5:
            high += 1
            high_low += effects[ta] < threshold
    n = len(G)
    return agree / n, top_effect / n, high, high_low


@dataclass
class Lesson:
    """The lesson's whole flow on a (usually small) configuration."""

    seed: int = SEED
    sequences: int = 720
    steps: int = STEPS
    split: tuple[int, int, int] = (360, 180, 180)
    epochs: int = 200
    lr: float = 0.6

    def __post_init__(self) -> None:
        assert sum(self.split) == self.sequences
        self.data = build_sequences(self.sequences, self.seed, self.steps)
        examples = model_inputs(self.data)
        n_train, n_val, _ = self.split
        self.train_set = examples[:n_train]  # seed 004: EG
        self.heldout_set = examples[n_train + n_val :]  # seed 004: SG

    def train_run(self, k: int) -> dict:
        """seed 004: egit(TOHUM + k)."""
        return train(self.seed + k, self.train_set, self.epochs, self.lr)
