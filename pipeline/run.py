"""The Hydra app: the whole lesson in one process.

    python -m pipeline.run [overrides]      e.g. train.lr=0.9 data.seed=7
    python -m pipeline.run -m train.seeds=[1],[2]

Prints the lesson's tables and writes metrics.json into the Hydra run directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pipeline.config import check_conf_yaml, validate
from pipeline.errors import PipelineError
from pipeline.files import write_json
from pipeline.report import text_tables
from pipeline.stages import evaluate, generate, train


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(raw: DictConfig) -> None:
    try:
        cfg = validate(raw)
        frame, summary = generate.run(cfg)
        params, _ = train.run(cfg, frame)
        document, steps = evaluate.run(cfg, frame, summary, params)
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    print(text_tables(document, steps, cfg.eval.high_weight, cfg.eval.low_effect))
    write_json(Path(HydraConfig.get().runtime.output_dir) / "metrics.json", document)


if __name__ == "__main__":
    try:
        check_conf_yaml()  # else Hydra prints a long traceback for a YAML syntax error
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    main()
