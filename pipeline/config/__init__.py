"""Config: the schema (schema.py), its validation (checks.py, with each number's
range in ranges.py, the outputs' paths in outputs.py, the cells in cells.py and the
seeds and ceilings in bounds.py) and loading conf/ or params.yaml (load.py). The
names every other package uses are imported here."""

from pipeline.config.cells import GridCell
from pipeline.config.checks import validate
from pipeline.config.load import (
    check_conf_yaml,
    compose,
    flatten,
    load_params,
    run_hydra_app,
    to_container,
    yaml_error,
)
from pipeline.config.schema import (
    CONF_DIR,
    DEVICES,
    DTYPES,
    MAX_BYTES,
    MAX_SEED,
    NUMBER_GROUPS,
    PARAMS_FILE,
    POSITIONAL,
    PROJECT_ROOT,
    Config,
    DataConfig,
    EvalConfig,
    FaithfulnessConfig,
    ModelConfig,
    PathsConfig,
    TaskConfig,
    TrackingConfig,
    TrainConfig,
)
from pipeline.config.shards import shard_of
from pipeline.core.errors import ConfigError

__all__ = [
    "ConfigError",
    "CONF_DIR",
    "DEVICES",
    "DTYPES",
    "MAX_BYTES",
    "MAX_SEED",
    "NUMBER_GROUPS",
    "PARAMS_FILE",
    "POSITIONAL",
    "PROJECT_ROOT",
    "Config",
    "DataConfig",
    "EvalConfig",
    "FaithfulnessConfig",
    "GridCell",
    "ModelConfig",
    "PathsConfig",
    "TaskConfig",
    "TrackingConfig",
    "TrainConfig",
    "check_conf_yaml",
    "compose",
    "flatten",
    "load_params",
    "run_hydra_app",
    "shard_of",
    "to_container",
    "validate",
    "yaml_error",
]
