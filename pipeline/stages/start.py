"""How a stage that reads upstream outputs starts: params.yaml's config, refused
before any work where the largest stage of this config would not fit in memory or
where an input is not what its stage last recorded.

A module of its own, not the stages' common entry (`pipeline.stages`): the memory
bound loads the models, and a stage that never checks it (generate, the figure
stages, track) would otherwise list them as code deps (pipeline/stages/dvc_yaml.py).
"""

from __future__ import annotations

from pipeline.config import Config, load_params, provenance
from pipeline.memory import check_memory


def checked_params(stage: str) -> Config:
    """params.yaml's config for `stage`, once its memory bound (`check_memory`) and its
    inputs (`provenance.verify_inputs`: made from these params, the bytes their stage
    recorded) are checked, so that no work starts that would be refused later."""
    cfg = load_params()
    check_memory(cfg)
    provenance.verify_inputs(cfg, stage)
    return cfg
