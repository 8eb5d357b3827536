"""How much memory each stage of a configuration needs at most, refused before
anything runs.

Every stage is a process of its own (DVC runs them one after another), so the
check is the largest stage's estimate: the interpreter with its libraries, plus
the dominant allocations of that stage, each a product of config sizes. The grid's
cells are stages too (grid@<cell>, pipeline/experiments/grid/memory.py): the study's
machinery on grid.seeds seeds (and the shuffled control of an order task beside
them), then the faithfulness battery on the first grid.faithfulness_seeds. A stage's
estimate is what it keeps throughout plus its largest phase (training, or the
battery), kept at or above the measured peak and within twice it
(benchmarks/bench_memory.py, tests/memory/test_memory.py).

The kind's own factors (its heads, a layer before the pooling, its parameter
count) come from its module (pipeline/models/interface.py), so the check sits above
both the config and the models, and imports torch: the stages that compute call
`check_memory` after loading their config; the generate stage and the commands
that compute nothing do not. The generate stage's own estimate (its process and the
sequences) is torch-free and checked with the config (pipeline/config/bounds.py).

The package, one idea a module: `sizes` (the measured constants and the runs a pass
holds), `study` (the study's machinery), `battery` (the faithfulness battery, the
sanity checks, robustness), `stages`
(each stage's estimate and `check_memory`), `device` (the memory of the device that
trains, and the chunks sized for it).
"""

from pipeline.memory.sizes import (
    BATTERY_RUNS,
    DEBATE_RUNS,
    adversary_pass,
    candidate_count,
)
from pipeline.memory.stages import check_memory, estimated_bytes, stage_estimates, stage_terms

__all__ = [
    "BATTERY_RUNS",
    "DEBATE_RUNS",
    "adversary_pass",
    "candidate_count",
    "check_memory",
    "estimated_bytes",
    "stage_estimates",
    "stage_terms",
]
