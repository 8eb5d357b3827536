"""What the report and track stages read of the experiments' outputs: each one's
results, by name (pipeline/experiments/__init__.py: its DOCUMENT of its SHAPE, or its
results module's `read`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config.schema import Config
from pipeline.core.errors import ConfigError
from pipeline.core.files import read_json
from pipeline.core.kinds import EXPERIMENTS, experiment, experiment_part, has_part


def check_document_shape(stage: str, path: Path, document: Any) -> None:
    """Refuse an experiment's document without the keys and types its readers take (its
    package's SHAPE), in one line."""
    shape = experiment(stage).SHAPE
    if not isinstance(document, dict):
        wrong = f"a JSON {type(document).__name__}, not an object"
    else:
        bad = [
            key
            for key, kind in shape.items()
            if not isinstance(document.get(key), kind) or isinstance(document.get(key), bool)
        ]
        if not bad:
            return
        wrong = f"{', '.join(bad)} missing or of another type"
    raise ConfigError(
        f"{path} is not the document the {stage} stage writes ({wrong}; it writes an "
        f"object of {', '.join(shape)}): rerun `dvc repro --force -s {stage}`"
    )


def experiment_results(cfg: Config, part: str = "") -> dict[str, Any]:
    """Each experiment's results by name, None where its stage has not run (the report
    and track stages show what there is; a stale one is refused by verify_inputs,
    since the outputs are their deps): its DOCUMENT, of its SHAPE, or what its
    results module reads. With `part`, only the experiments that have that module
    (`tracked`: those whose numbers are on the lesson's runs)."""
    results = {}
    for name in EXPERIMENTS:
        if part and not has_part(name, part):
            continue
        package = experiment(name)
        if not hasattr(package, "DOCUMENT"):
            results[name] = experiment_part(name, "results").read(cfg)
            continue
        path = Path(getattr(cfg.paths, name)) / package.DOCUMENT
        results[name] = read_json(path) if path.exists() else None
        if results[name] is not None:
            check_document_shape(name, path, results[name])
    return results
