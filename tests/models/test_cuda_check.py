"""The compile gate (pipeline/models/cuda_check.py, `python -m pipeline cuda-check`):
every kind's real fused kernel, at the pipeline's shapes, compiles for compute
capabilities 8.0 and 9.0 with no GPU (numba with CUDA's libNVVM, then ptxas),
within a register and spill budget; and a shape's kernel is made once a process.

They run wherever libNVVM and ptxas are found (a CUDA toolkit; docs/testing.md),
GPU or not, and skip, naming what is missing, only where they are not.
"""

from __future__ import annotations

import io

import pytest
import torch

from pipeline.__main__ import main as pipeline_main
from pipeline.models import cuda_check, cuda_launch, interface
from pipeline.models.cuda_check import CAPABILITIES, Compiled

# (registers, spill bytes, local bytes) at most, for every capability. A thread has
# 255 registers at most. Lesson and sink spill nothing; where a kernel keeps more
# numbers than registers (4 heads, a learned p (T, C)), ptxas spills, within this.
BUDGET = {
    "lesson": (128, 0, 0),
    "sink": (128, 0, 0),
    "multihead2": (224, 0, 0),
    "multihead4": (255, 512, 256),
    "posenc_learned": (255, 320, 160),
    "posenc_sinusoidal": (192, 0, 0),
    # window keeps one example's z_t, score_t and r_t (4 T values) in local memory
    "window2": (240, 0, 384),
    "window3": (240, 0, 384),
    "window12": (240, 0, 384),
}


@pytest.fixture(scope="module")
def shapes() -> list[cuda_check.Shape]:
    """Every variant at params.yaml's shapes; a skip naming what is missing where no
    libNVVM or ptxas is found (looked for here, not at collection: numba.cuda loads)."""
    missing = cuda_check.missing_toolchain()
    if missing is not None:
        pytest.skip(f"no CUDA compiler: {missing}")
    return cuda_check.pipeline_shapes()


@pytest.fixture(scope="module")
def compiled(shapes) -> dict[tuple[str, tuple[int, int]], Compiled | Exception]:
    """Every variant's kernel for every capability, or the error it raised."""
    out: dict[tuple[str, tuple[int, int]], Compiled | Exception] = {}
    for shape in shapes:
        for capability in CAPABILITIES:
            try:
                out[shape.variant, capability] = cuda_check.check(shape, capability)
            except Exception as error:  # noqa: BLE001 - the test names it
                out[shape.variant, capability] = error
    return out


def test_gpu_compile_covers_every_kind_and_variant(shapes):
    assert [shape.variant for shape in shapes] == list(BUDGET)
    kinds = {shape.model.kind for shape in shapes}
    assert kinds == {"lesson", "sink", "multihead", "posenc", "window"}


@pytest.mark.parametrize("capability", CAPABILITIES, ids=["cc8.0", "cc9.0"])
@pytest.mark.parametrize("variant", list(BUDGET))
def test_gpu_compile_every_kind_compiles_within_its_budget(compiled, variant, capability):
    result = compiled[variant, capability]
    assert isinstance(result, Compiled), f"{type(result).__name__}: {result}"
    registers, spill, local = BUDGET[variant]
    assert 0 < result.registers <= registers
    assert result.spill <= spill
    assert result.local <= local


def test_gpu_compile_a_second_request_returns_the_cached_kernel(shapes, compiled):
    """A shape's kernel is made (and compiled) once a process, whatever the runs,
    epochs and learning rate: training again does not compile again."""
    for shape in shapes:
        kernel, arguments = cuda_check.kernel_and_arguments(shape)
        again, others = cuda_check.kernel_and_arguments(shape, epochs=7, lr=0.1)
        assert again is kernel
        signature = cuda_launch.signature(arguments)
        assert cuda_launch.signature(others) == signature
        first = cuda_check.compiled(kernel, signature, (9, 0))
        assert cuda_check.compiled(again, signature, (9, 0)) is first
    lesson, window = shapes[0], shapes[-1]
    assert (
        cuda_check.kernel_and_arguments(lesson)[0]
        is not (cuda_check.kernel_and_arguments(window)[0])
    )


def test_gpu_compile_the_kinds_hand_out_one_kernel_a_shape(shapes):
    """Two trainings of the same shape, each with its own `fused_training`, launch the
    same kernel object (numba keeps its compiled code on it)."""
    shape = shapes[0]
    params = interface.init_params(0, [1, 2, 3], shape.model, shape.steps)
    others = interface.init_params(5, [4], shape.model, shape.steps)
    inputs = torch.zeros(5, shape.steps, 2, dtype=torch.float64)
    labels = torch.zeros(5, dtype=torch.float64)
    with cuda_check.planning():
        first = interface.fused_training(params, inputs, labels)
        second = interface.fused_training(others, inputs[:3], labels[:3])
    assert first.kernel(params)[0] is second.kernel(others)[0]


def test_gpu_compile_command_prints_a_line_per_kind_and_capability(shapes, compiled, capsys):
    """`python -m pipeline cuda-check`: its lines (the kernels compiled above, cached)."""
    pipeline_main(["cuda-check"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(shapes) * len(CAPABILITIES)
    for line, (shape, capability) in zip(
        lines, [(s, c) for s in shapes for c in CAPABILITIES], strict=True
    ):
        result = compiled[shape.variant, capability]
        assert line.split() == [
            shape.variant,
            "cc",
            f"{capability[0]}.{capability[1]}",
            str(result.registers),
            "registers",
            str(result.spill),
            "spill",
            "bytes",
            str(result.local),
            "local",
            "bytes",
            "ok",
        ]


def test_gpu_compile_command_names_a_kernel_that_fails_and_exits_1(shapes, compiled, monkeypatch):
    def fails(shape, capability):
        if shape.variant == "sink" and capability == (9, 0):
            raise TypeError("Signature mismatch: 2 argument types given,\nbut function takes 1")
        return compiled[shape.variant, capability]

    monkeypatch.setattr(cuda_check, "check", fails)
    out = io.StringIO()
    assert not cuda_check.run(shapes, out)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(shapes) * len(CAPABILITIES)
    wrong = [line for line in lines if not line.endswith("  ok")]
    assert wrong == [
        "sink               cc 9.0  error: TypeError: Signature mismatch: 2 argument types "
        "given, but function takes 1"
    ]
    monkeypatch.setattr(cuda_check, "pipeline_shapes", lambda: shapes[:2])
    with pytest.raises(SystemExit) as exited:
        cuda_check.main([])
    assert exited.value.code == 1


def test_gpu_compile_where_no_ptxas_is_found_the_command_says_so_in_one_line(monkeypatch):
    """What the tests' skip and the command name where the toolkit is missing."""
    monkeypatch.setattr(cuda_check, "ptxas", lambda: None)
    missing = cuda_check.missing_toolchain()
    assert missing is not None
    assert "ptxas" in missing or "libNVVM" in missing or "numba.cuda" in missing
    with pytest.raises(SystemExit) as exited:
        cuda_check.main([])
    said = str(exited.value.code)
    assert said == f"error: cannot compile the CUDA kernels here: {missing}"
    assert "\n" not in said


def test_gpu_compile_tools_come_from_the_wheels_where_the_machine_has_none(tmp_path, monkeypatch):
    """No toolkit on the machine: ptxas, libNVVM, libdevice and the CUDA runtime come
    from NVIDIA's wheels (the dev lock's cuda-toolkit[nvcc], under `nvidia/cu13`), and
    numba's path decision names them; where neither has them, nothing is found."""
    from numba.cuda import cuda_paths

    from pipeline.models import cuda_tools

    wheel = tmp_path / "nvidia" / "cu13"
    files = ["lib/libnvvm.so.4", "lib/libcudart.so.13", "nvvm/libdevice/libdevice.10.bc"]
    for name in [*files, "bin/ptxas"]:
        (wheel / name).parent.mkdir(parents=True, exist_ok=True)
        (wheel / name).write_bytes(b"")
    (wheel / "bin" / "ptxas").chmod(0o755)
    monkeypatch.setattr(cuda_tools, "wheel_folders", lambda: [tmp_path / "nvidia"])
    monkeypatch.setattr(cuda_tools, "system_ptxas", lambda: None)
    monkeypatch.setattr(cuda_tools, "system_nvvm", lambda: False)
    decided = {"nvvm": None, "libdevice": None, "cudalib_dir": None}
    monkeypatch.setattr(cuda_paths, "get_cuda_paths", lambda: decided)
    cuda_tools.use_wheel_nvvm.cache_clear()
    try:
        assert cuda_tools.ptxas() == str(wheel / "bin" / "ptxas")
        assert cuda_tools.use_wheel_nvvm() == "wheel"
        assert decided["nvvm"].info == str(wheel / "lib" / "libnvvm.so.4")
        assert decided["libdevice"].info == str(wheel / "nvvm/libdevice/libdevice.10.bc")
        assert decided["cudalib_dir"].info == str(wheel / "lib")
        monkeypatch.setattr(cuda_tools, "wheel_folders", lambda: [])
        cuda_tools.use_wheel_nvvm.cache_clear()
        assert cuda_tools.ptxas() is None
        assert cuda_tools.use_wheel_nvvm() == "none"
    finally:
        cuda_tools.use_wheel_nvvm.cache_clear()
