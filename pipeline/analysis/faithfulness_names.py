"""The faithfulness battery's metric names and which way each is better.

Torch-free, for the prose and tables that quote them (pipeline/reporting/);
pipeline/analysis/faithfulness.py computes them.
"""

from __future__ import annotations

METRICS = (
    "tau_loo",
    "aopc_comprehensiveness",
    "aopc_sufficiency",
    "flips_to_decision",
    "hit_at_1",
    "marked_rank",
    "auprc",
)
RANDOM = "random"
# Against the model's own behaviour: every task. The rest score against the task's
# rationale (the steps that decide the label): only where it singles out steps.
MODEL_METRICS = METRICS[:4]


# Which way is better, per metric: what "ranks first" means.
HIGHER_IS_BETTER = {
    "tau_loo": True,
    "aopc_comprehensiveness": True,
    "aopc_sufficiency": False,
    "flips_to_decision": False,
    "hit_at_1": True,
    "marked_rank": False,
    "auprc": True,
}


def competitors(rows: list[str], metric: str) -> list[str]:
    """The rows that compete for first place on `metric`: not the random baseline, and
    for tau_loo not loo itself, the reference (tau 1 by construction)."""
    return [r for r in rows if r != RANDOM and not (metric == "tau_loo" and r == "loo")]
