"""Each stage's estimated peak, and the check that refuses a configuration whose
largest stage cannot fit before anything runs."""

from __future__ import annotations

from pipeline.config.bounds import LIGHT_PROCESS_BYTES, MemoryTerm, memory_refusal, sequences_term
from pipeline.config.schema import MAX_BYTES, Config, ModelConfig
from pipeline.core.device import resolve_device
from pipeline.core.errors import ConfigError
from pipeline.core.files import byte_size
from pipeline.core.kinds import EXPERIMENTS, experiment_part
from pipeline.memory.device import DEVICE_PHASES, free_bytes, on_gpu
from pipeline.memory.sizes import (
    LIGHT_STAGES,
    PROCESS_BYTES,
    THREADS_BYTES,
    UNTHREADED_STAGES,
)
from pipeline.memory.study import study_terms


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The dominant allocations of each stage that computes (dvc.yaml's names): an
    experiment's memory module adds its stages, and what it adds to another stage (the
    study's per-example table, which the report reads)."""
    lesson = {term.what: term for term in study_terms(cfg, len(cfg.train.seeds), "train.seeds")}
    stages = {
        "generate": [sequences_term(cfg)],
        "train": [sequences_term(cfg), lesson["the parameters"], lesson["training"]],
        "evaluate": [sequences_term(cfg), lesson["step ablation"], lesson["the window layer"]],
        "report": [sequences_term(cfg)],
    }
    for name in EXPERIMENTS:  # each experiment's stages, and its part of the others'
        for stage, terms in experiment_part(name, "memory").stage_terms(cfg).items():
            stages[stage] = stages.get(stage, []) + terms
    return stages


def stage_bytes(stage: str, terms: list[MemoryTerm]) -> int:
    """About how much memory a stage needs at most: the process, its threads where it
    trains or explains, what it keeps throughout, and its largest phase (training,
    then the battery: a grid cell frees the one, and returns the freed heap to the
    kernel (`processes.release_freed_memory`), before the other starts)."""
    trains = stage not in UNTHREADED_STAGES
    threads = THREADS_BYTES if trains else 0
    kept = sum(term.bytes for term in terms if not term.phase)
    phases: dict[str, int] = {}
    for term in terms:
        if term.phase:
            phases[term.phase] = phases.get(term.phase, 0) + term.bytes
    process = LIGHT_PROCESS_BYTES if stage in LIGHT_STAGES else PROCESS_BYTES
    return process + threads + kept + max(phases.values(), default=0)


def stage_estimates(cfg: Config) -> dict[str, int]:
    """Each computing stage's estimated peak in the host's memory, in bytes."""
    gpu = on_gpu(resolve_device(cfg.train.device))
    return {
        stage: stage_bytes(stage, host_terms(terms, gpu))
        for stage, terms in stage_terms(cfg).items()
    }


def host_terms(terms: list[MemoryTerm], gpu: bool) -> list[MemoryTerm]:
    """The terms the host's memory holds: every one, or on a GPU those outside the
    phases whose tensors live there (DEVICE_PHASES)."""
    return [term for term in terms if not (gpu and term.phase in DEVICE_PHASES)]


def device_bytes(terms: list[MemoryTerm]) -> int:
    """What a stage holds on a GPU at most: its largest phase of DEVICE_PHASES."""
    phases = [sum(term.bytes for term in terms if term.phase == phase) for phase in DEVICE_PHASES]
    return max(phases)


def check_device_memory(cfg: Config) -> None:
    """On cuda, refuse a stage whose chunks cannot fit the GPU's free memory even at one
    run a chunk (the chunks are as large as fits: `device.study_chunk`)."""
    device = resolve_device(cfg.train.device)
    if not on_gpu(device):
        return
    needs = {stage: device_bytes(terms) for stage, terms in stage_terms(cfg).items()}
    stage = max(needs, key=needs.__getitem__)
    free = free_bytes(device)
    if needs[stage] > free:
        raise ConfigError(
            f"invalid config value train.device={cfg.train.device!r}: stage {stage} needs "
            f"about {byte_size(needs[stage])} on {device}, more than its {byte_size(free)} "
            "free; allowed: cpu"
        )


def estimated_bytes(cfg: Config) -> int:
    """About how much memory `cfg` needs at most: its largest stage's estimate."""
    return max(stage_estimates(cfg).values())


def _reference_terms(cfg: Config, stage: str) -> list[MemoryTerm]:
    """The same stage's terms on the defaults of the same model kind (a grid cell: the
    same task and variant at the grid's default sizes)."""
    defaults = Config(model=ModelConfig(kind=cfg.model.kind))
    for name in EXPERIMENTS:  # its configured cells (REPLACED), at the default sizes
        for key in getattr(experiment_part(name, "config"), "REPLACED", ()):
            setattr(getattr(defaults, name), key, getattr(getattr(cfg, name), key))
    return stage_terms(defaults)[stage]


def check_memory(cfg: Config) -> None:
    """Refuse, before anything runs, a configuration whose largest stage cannot fit
    in MAX_BYTES of the host's memory, naming the key of its largest allocation (on
    cuda, the chunks' tensors are the GPU's: `check_device_memory`)."""
    check_device_memory(cfg)
    estimates = stage_estimates(cfg)
    stage = max(estimates, key=estimates.__getitem__)
    if estimates[stage] <= MAX_BYTES:
        return
    gpu = on_gpu(resolve_device(cfg.train.device))
    terms = host_terms(stage_terms(cfg)[stage], gpu)
    largest = max(terms, key=lambda term: term.bytes)
    reference = host_terms(_reference_terms(cfg, stage), gpu)
    key = largest.blamed(reference[terms.index(largest)])
    raise ConfigError(memory_refusal(cfg, stage, estimates[stage], largest, key))
