"""The roar stage's settings (params.yaml's `roar:` group), their ranges and checks."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pipeline.config.intervals import Range, at_least, check

PATHS = {"roar": "reports/roar"}  # paths.roar: metrics.json (docs/field.md)
FOLDERS = ("roar",)  # the paths that are folders


@dataclass
class Settings:
    """Remove and retrain (Hooker et al. 2019; docs/field.md): each ranking of the
    lesson's runs (train.seeds) removes its top `fractions` of every sequence's steps
    (the reading replaced by the training split's mean reading, the marker kept), and
    runs 1..seeds, each from stream(data.seed + k), retrain on what is left, as the
    study trains them. The docs' numbers: dvc exp run -S roar.seeds=1000"""

    seeds: int = 50  # retrained runs per ranking and fraction
    # of the steps removed, rounded to whole steps
    fractions: list[float] = field(default_factory=lambda: [0.1, 0.3, 0.5, 0.7, 0.9])
    random_seed: int = 0  # the random ranking: numpy.random.default_rng(random_seed)
    # Song et al. (2023)'s check: these explainers again, each smoothed over `window` steps.
    smoothed: list[str] = field(default_factory=lambda: ["attention", "integrated_gradients"])
    window: int = 3  # the moving average's width (odd: centred on the step)


RANGES = {
    "seeds": at_least(2),
    "fractions": Range(0, 1, open_low=True, open_high=True, each="fraction"),
}
RELATIVE = {"window": "an odd integer in 3..2*data.steps-1"}


def removed_count(fraction: float, steps: int) -> int:
    """The steps a fraction k of `steps` removes: k T to the nearest whole step, halves
    up (rounded to 9 decimals first, so 0.3 * 10 is 3, not 3.0000000000000004)."""
    return math.floor(round(fraction * steps, 9) + 0.5)


def check_settings(cfg) -> None:
    """Remove and retrain's lists and window (each fraction's range: RANGES); the
    fractions' step counts where the roar stage runs (`check_fractions`), the smoothed
    explainers' names where the battery's rows are known (retrain.py). A window of
    2 T - 1 already averages the whole sequence at every step; a wider one only
    overflowed torch's pooling (a traceback)."""
    fractions, window, steps = list(cfg.roar.fractions), cfg.roar.window, cfg.data.steps
    check(fractions != [], "roar.fractions", "must list at least one fraction", [])
    increasing = fractions == sorted(set(fractions))
    check(increasing, "roar.fractions", "must be increasing, without repeats", fractions)
    check(
        3 <= window <= 2 * steps - 1 and window % 2 == 1,
        "roar.window",
        f"must be an odd integer in 3..{2 * steps - 1} (2 data.steps - 1: a window that "
        "wide averages the whole sequence at every step)",
        window,
    )


def check_fractions(cfg) -> None:
    """Each of roar.fractions removes its own number of steps (`removed_count`), at least
    one: a fraction is a number of steps and a key of metrics.json (`{k:g}`), so one
    that removed no step published drops of 0, and two that removed the same steps,
    or printed alike, became one key. Checked by the roar stage, the one that reads
    them: another `data.steps` (2, say) is no reason to refuse a run that never removes."""
    fractions, steps = list(cfg.roar.fractions), cfg.data.steps
    counts = [removed_count(k, steps) for k in fractions]
    distinct = 0 not in counts and len(set(counts)) == len(counts)
    check(
        distinct and len({f"{k:g}" for k in fractions}) == len(fractions),
        "roar.fractions",
        f"each fraction k must remove at least one of the data.steps={steps} steps and "
        f"a different number from the others (k*{steps} rounded: {counts}); allowed: "
        f"fractions n/{steps} for distinct n in 1..{steps - 1} ({1 / steps:.4g} removes 1)",
        fractions,
    )
