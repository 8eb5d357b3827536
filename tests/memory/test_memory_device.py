"""Chunks sized for the device (pipeline/memory/device.py): the rules as pure functions
of the memory numbers, and the estimate on a GPU simulated by its numbers alone (no
GPU here: `torch.cuda.mem_get_info` and the resolved device are stood in for)."""

from __future__ import annotations

import pytest
import torch

from pipeline.config import MAX_BYTES, validate
from pipeline.core.errors import ConfigError
from pipeline.memory import device, stages, study
from pipeline.memory.device import gpu_chunk, pieces, training_piece
from pipeline.models import train
from pipeline.models.posenc import POSENC_BLOCK
from pipeline.models.window import KERNEL_BLOCK
from tests.conftest import composed

GIB = 2**30


def test_a_gpu_chunk_holds_every_run_that_fits_its_share_of_the_free_memory():
    # 1000 runs of 100 bytes fit 0.8 of 1 MB: one chunk of all of them.
    assert gpu_chunk(1000, 100, 10**6, threads=8) == 1000
    # 10^6 runs of 100 bytes do not fit 0.8 of 10^6 bytes (800,000): 8 chunks in
    # flight share it, 800,000 / (100 x 8) = 1000 runs each; on 2 threads, 4000.
    assert gpu_chunk(10**6, 100, 10**6, threads=8) == 1000
    assert gpu_chunk(10**6, 100, 10**6, threads=2) == 4000
    # Not even one run fits: one run a chunk (check_memory refuses it on cuda).
    assert gpu_chunk(10, 10**6, 10**6, threads=1) == 1


def test_training_pieces_give_every_thread_work_and_keep_the_kind_s_blocks_whole():
    # The lesson's 1000 seeds in chunks of 250: on 16 threads, pieces of 63 (16 jobs).
    assert training_piece(250, 1000, 16) == 63
    # On 2 threads the chunks are already the work of both: a piece is a chunk.
    assert training_piece(250, 1000, 2) == 250
    assert training_piece(250, 1000, 1) == 250
    # A kind training in blocks of 50: 63 rounds up to 100, never past the chunk.
    assert training_piece(250, 1000, 16, together=50) == 100
    assert training_piece(250, 1000, 16, together=250) == 250
    assert training_piece(40, 100, 2, together=50) == 40
    assert pieces([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5, 6], [7]]


def test_training_pieces_on_a_gpu_are_whole_chunks():
    """On cuda a chunk trains as one series of kernel launches, not a piece a thread."""
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert training_piece(250, 1000, 16, device=cuda) == 250
    assert training_piece(250, 1000, 16, together=50, device=cuda) == 250
    assert training_piece(250, 1000, 16, device=cpu) == 63


@pytest.mark.parametrize(
    "kind, together",
    [
        ("lesson", 1),
        ("sink", 1),
        ("multihead", 1),
        ("posenc", POSENC_BLOCK),
        ("window", KERNEL_BLOCK),
    ],
)
def test_the_runs_a_piece_keeps_together_are_the_kind_s_block(kind, together):
    """One pass of every run (lesson, sink, multihead): any grouping; posenc's blocks of
    50 and window's kernel blocks of 250 stay whole."""
    cfg = validate(composed([f"model={kind}"]))
    inputs = torch.zeros(4, cfg.data.steps, 2, dtype=torch.float64)
    labels = torch.zeros(4, dtype=torch.float64)
    assert train.runs_together(cfg.model, inputs, labels) == together


def test_on_the_cpu_the_chunk_is_study_chunk():
    cfg = validate(composed(["study.chunk=100"]))
    assert study.chunk_runs(cfg, 1000) == 100
    assert study.chunk_runs(cfg, 30) == 30  # never more than the seeds
    assert device.free_bytes(torch.device("cpu")) == MAX_BYTES


@pytest.fixture
def gpu(monkeypatch, torch_threads):
    """gpu(free): from then on, train.device resolves to cuda with `free` bytes free;
    2 threads of ours."""
    torch_threads(2)
    cuda = torch.device("cuda", 0)

    def with_free(free: int) -> None:
        for module in (device, stages):
            monkeypatch.setattr(module, "resolve_device", lambda name: cuda)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda _: (free, 80 * GIB))

    return with_free


def test_on_cuda_the_free_memory_sizes_the_chunks_not_study_chunk(gpu):
    cfg = validate(composed(["study.seeds=50000", "study.chunk=250"]))
    per_run = study.run_bytes(cfg)
    # The lesson's run: 360 train examples x 12 steps x 6 values, and 180 held-out x 12
    # masks x 12 steps x 2 values, float64.
    assert per_run == (360 * 12 * 6 + 180 * 12 * 12 * 2) * 8
    gpu(80 * GIB)
    assert study.chunk_runs(cfg, 50000) == 50000  # 3.1 GB: one chunk
    gpu(per_run * 10_000)  # 0.8 of it on 2 threads: 4000 runs a chunk
    assert study.chunk_runs(cfg, 50000) == 4000
    assert study.chunk_runs(cfg, 50000, sets=2) == 4000


def test_on_cuda_the_chunks_leave_the_host_s_estimate_and_are_checked_on_the_gpu(gpu):
    """50,000 seeds in one chunk: 10.4 GB of training tensors, refused against the CPU's
    8 GiB; on an 80 GiB GPU they are the GPU's, and the host keeps the rest."""
    cfg = validate(composed(["study.seeds=50000", "study.chunk=50000"]))
    with pytest.raises(ConfigError, match="study.chunk"):
        stages.check_memory(cfg)  # on the CPU
    gpu(80 * GIB)
    stages.check_memory(cfg)
    terms = {term.what: term for term in stages.stage_terms(cfg)["study"]}
    training = terms["training"].bytes + terms["step ablation"].bytes
    assert training == 50000 * study.run_bytes(cfg)
    host = stages.stage_estimates(cfg)["study"]
    assert host == stages.stage_bytes("study", stages.host_terms(list(terms.values()), True))
    assert host < MAX_BYTES < host + training
    gpu(study.run_bytes(cfg) // 2)  # not one run fits: the stage that needs most is named
    refusal = r"train.device='auto': stage grid@first_half-window12 needs about .* on cuda:0"
    with pytest.raises(ConfigError, match=refusal):
        stages.check_memory(cfg)
