"""A sharded seed study (`study.shard=i/n`, docs/sweeps.md): what each shard job
writes (shard.pt: its runs, per-example values and config), and the merge of one
study's shards into the summary an unsharded run writes, byte for byte
(`python -m pipeline merge_study`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch

from pipeline.analysis.seed_study import SeedRuns, lesson_accuracy, summarize
from pipeline.config import NUMBER_GROUPS, Config, flatten, to_container, validate
from pipeline.core.errors import PipelineError

SHARD_FILE = "shard.pt"  # what a study.shard job writes into its Hydra run directory


def shard_config(cfg: Config) -> dict:
    """What every shard of one study shares: the number-shaping config but the shard."""
    config = to_container(cfg)
    config["study"]["shard"] = None
    return {group: config[group] for group in NUMBER_GROUPS}


def shard_bytes(cfg: Config, runs: SeedRuns, outside: dict[int, float]) -> bytes:
    """shard.pt: a shard's runs with their per-example values (the bootstrap resamples
    examples), the lesson seeds trained outside the study, and the config."""
    buffer = io.BytesIO()
    document = {
        "config": json.dumps(shard_config(cfg), sort_keys=True),
        "shard": cfg.study.shard,
        "seeds": torch.tensor(runs.seeds),
        "params": runs.params,
        "values": runs.values,
        "outside": {str(seed): accuracy for seed, accuracy in outside.items()},
    }
    torch.save(document, buffer)
    return buffer.getvalue()


# What shard_bytes writes, and the type each entry must have.
SHARD_TYPES = {
    "config": str,
    "shard": str,
    "seeds": torch.Tensor,
    "params": torch.Tensor,
    "values": dict,
    "outside": dict,
}


def load_shard(path: Path) -> tuple[int, int, dict]:
    """(index, count, document) of a shard.pt, or a one-line error naming the file.

    weights_only=True: a file of unknown origin runs no code when loaded. torch's own
    error is not relayed, since it advises loading with weights_only=False."""
    try:
        document = torch.load(path, weights_only=True)
        index, count = map(int, document["shard"].split("/"))
        if not all(isinstance(document[key], kind) for key, kind in SHARD_TYPES.items()):
            raise TypeError("not the entries shard_bytes writes")
        json.loads(document["config"])
    except OSError as err:
        raise PipelineError(f"cannot read shard {path}: {err.strerror or err}") from None
    except Exception:  # torch raises several types for a damaged or foreign file
        raise PipelineError(
            f"cannot read shard {path}: not a study shard, or a damaged one"
        ) from None
    return index, count, document


def merge_shards(paths: list[Path]) -> tuple[Config, SeedRuns, dict[int, float]]:
    """(config, runs in seed order, outside accuracy) of the shards in `paths`: one
    study's shards 0..n-1, each exactly once, or a one-line error."""
    if not paths:
        raise PipelineError(f"no {SHARD_FILE} found")
    shards = {}
    for path in paths:
        index, count, document = load_shard(path)
        if index in shards:
            raise PipelineError(
                f"shard {document['shard']} twice: {shards[index][0]} and {path} "
                "(two sweeps in one directory?)"
            )
        shards[index] = (path, count, document)
    first_path, first_count, first = shards[min(shards)]
    config = json.loads(first["config"])
    ours = flatten(config)
    for path, count, document in shards.values():
        theirs = flatten(json.loads(document["config"]))
        changed = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
        if changed or count != first_count:
            what = ", ".join(changed) or f"shard count {count} vs {first_count}"
            raise PipelineError(f"{path} is not a shard of {first_path}'s study: {what} differ")
    missing = sorted(set(range(first_count)) - set(shards))
    if missing:
        names = ", ".join(f"{i}/{first_count}" for i in missing)
        raise PipelineError(f"missing shards {names}: the study needs all {first_count}")
    ordered = [shards[index][2] for index in range(first_count)]
    runs = SeedRuns(
        seeds=torch.cat([d["seeds"] for d in ordered]).tolist(),
        params=torch.cat([d["params"] for d in ordered]),
        values={name: torch.cat([d["values"][name] for d in ordered]) for name in first["values"]},
    )
    outside = {int(seed): accuracy for seed, accuracy in first["outside"].items()}
    return validate(config), runs, outside


def merged_summary(sweep_dir: Path) -> dict:
    """The study summary of the shards under `sweep_dir` (a sharded study's sweep):
    byte for byte what an unsharded run of the same seeds writes."""
    if not sweep_dir.is_dir():
        raise PipelineError(f"no such sweep directory: {sweep_dir}")
    cfg, runs, outside = merge_shards(sorted(sweep_dir.rglob(SHARD_FILE)))
    return summarize(runs, cfg, lesson_accuracy(cfg, runs, outside))
