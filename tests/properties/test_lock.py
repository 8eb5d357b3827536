"""The dependency locks (requirements.lock for the main job, requirements-dev.lock
for the tests, requirements-torch.txt and requirements-torch-cuda.lock) agree with
pyproject.toml and each other: every dependency is pinned to a version its range
allows, in the lock that installs it, and the two locks pin the same versions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from pipeline.config import PROJECT_ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)\s*(?:\\|$)")


def pins(name: str) -> dict[str, Version]:
    found = {}
    for line in (PROJECT_ROOT / name).read_text().splitlines():
        match = PIN.match(line)
        if match:
            found[canonicalize_name(match[1])] = Version(match[2])
    return found


def project_requirements(extras: bool) -> list[Requirement]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    listed = (
        project["dependencies"]
        if not extras
        else [r for extra in project["optional-dependencies"].values() for r in extra]
    )
    return [Requirement(r) for r in listed]


LOCKS = [("requirements.lock", False), ("requirements-dev.lock", False)]


@pytest.mark.parametrize(("lock", "extras"), [*LOCKS, ("requirements-dev.lock", True)])
def test_every_pyproject_dependency_is_pinned_within_its_range(lock, extras):
    locked = pins(lock) | pins("requirements-torch.txt")
    for requirement in project_requirements(extras):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement.name} is not in {lock}: run `bash scripts/lock.sh`"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{lock} pins {name}=={locked[name]}, outside pyproject's {requirement}: "
            "run `bash scripts/lock.sh`"
        )


def test_the_main_lock_is_the_dev_locks_pins_without_the_extras():
    main, dev = pins("requirements.lock"), pins("requirements-dev.lock")
    assert {name: dev.get(name) for name in main} == main
    core = {canonicalize_name(r.name) for r in project_requirements(False)}
    extras = {canonicalize_name(r.name) for r in project_requirements(True)} - core
    assert not extras & set(main)  # the main job installs no launcher and no test tool


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_lock_is_fully_hashed_and_leaves_torch_to_its_own_file(lock):
    text = (PROJECT_ROOT / lock).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert len(entries) > 50
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        assert PIN.match(entry) and "--hash=sha256:" in entry, entry.splitlines()[0]
    assert "torch" not in pins(lock)
    assert list(pins("requirements-torch.txt")) == ["torch"]
    # CUDA-only packages come with a CUDA build of torch, never from the lock; but the
    # dev lock's compiler for the gpu_compile tests (cuda-toolkit[nvcc]: libNVVM and
    # ptxas where a machine has no CUDA toolkit), at torch's CUDA build's pins.
    compiler = {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime"}
    cuda = {name for name in pins(lock) if name.startswith(("nvidia-", "triton"))}
    assert cuda == (compiler if lock == "requirements-dev.lock" else set())
    torch_cuda = pins("requirements-torch-cuda.lock")
    for name in (cuda | {"cuda-toolkit"}) & set(pins(lock)):
        if name in torch_cuda:
            assert pins(lock)[name] == torch_cuda[name], name


def test_ci_and_the_readme_install_from_the_locks():
    """The README's main command installs the main lock; its test command and CI the
    dev lock; both torch first and this project without dependencies."""
    ci = (PROJECT_ROOT / ".ci/run").read_text().replace("-q ", "")
    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("python3.11 -m venv")]
    main = [c for c in commands if c.endswith("&& dvc repro")]
    tests = [c for c in commands if c.endswith("&& python -m pytest")]
    assert (
        len(main) == 1 and len(tests) == 1
    )  # the main job (a CPU-only index: one flag), the tests
    for command, lock in [
        *((c, "requirements.lock") for c in main),
        (tests[0], "requirements-dev.lock"),
    ]:
        assert f"install --require-hashes --no-deps -r {lock} " in command, command
        torch = "install --require-hashes --no-deps -r requirements-torch.txt"
        assert f"{torch} -r requirements-torch-cuda.lock " in command, command
        assert "install --no-deps --no-build-isolation -e ." in command
    assert "install --require-hashes --no-deps -r requirements-dev.lock" in ci
    assert "install --require-hashes --no-deps -r requirements-torch.txt" in ci
    assert 'install -e ".[dev]"' not in ci + readme


def entries(name: str) -> list[str]:
    text = (PROJECT_ROOT / name).read_text()
    return [e for e in re.split(r"\n(?=[A-Za-z0-9])", text) if not e.startswith("#")]


@pytest.mark.parametrize("name", ["requirements-torch.txt", "requirements-torch-cuda.lock"])
def test_torch_and_its_cuda_packages_are_pinned_with_hashes(name):
    """torch's file lists the hash of each build an install may pick (PyPI's wheels
    and the CPU build's: the tie to a build is the hash, not the version), and the
    CUDA build's own packages are a hashed lock of their own."""
    found = entries(name)
    assert found
    for entry in found:
        assert PIN.match(entry) and "--hash=sha256:" in entry, entry.splitlines()[0]
    if name == "requirements-torch.txt":
        assert list(pins(name)) == ["torch"]
        assert found[0].count("--hash=sha256:") > 2  # every build, not one
    else:
        names = set(pins(name))
        dev = pins("requirements-dev.lock")
        # shared only with the dev lock's CUDA compiler (cuda-toolkit[nvcc]), same pins
        assert "torch" not in names
        assert names & set(dev) <= {"cuda-toolkit", "nvidia-cuda-runtime"}
        assert all(pins(name)[n] == dev[n] for n in names & set(dev))
        assert any(n.startswith("nvidia-") for n in names)


def fake_wheel(folder: Path, name: str, version: str) -> None:
    """A well-formed wheel of that name and version, whatever its hash."""
    stem = f"{name.replace('-', '_')}-{version}"
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(
            f"{stem}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        )
        wheel.writestr(
            f"{stem}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{stem}.dist-info/RECORD", "")
        wheel.writestr(f"{name.replace('-', '_')}/__init__.py", "FAKE = True\n")


@pytest.mark.slow  # a venv and pip, end to end
def test_the_offline_gpu_install_refuses_a_torch_wheel_whose_hash_is_not_listed(tmp_path):
    """`WHEELS=dir bash scripts/gpu_check.sh` on a machine without CUDA torch, from a
    folder holding a fake torch 2.13.0 (and fake CUDA packages at the locked
    versions): pip refuses them by hash and nothing is installed."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    for name in [
        "scripts/gpu_check.sh",
        "scripts/lock_subset.py",
        "requirements.lock",
        "requirements-dev.lock",
        "requirements-torch.txt",
        *(
            ["requirements-torch-cuda.lock"]
            * (PROJECT_ROOT / "requirements-torch-cuda.lock").exists()
        ),
    ]:
        (project / name).write_bytes((PROJECT_ROOT / name).read_bytes())
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ["requirements-torch.txt", "requirements-torch-cuda.lock"]:
        if (PROJECT_ROOT / name).exists():
            for package, version in pins(name).items():
                fake_wheel(wheels, package, str(version))
    env = {
        **os.environ,
        "WHEELS": str(wheels),
        "PIP_CONFIG_FILE": os.devnull,  # no other wheel folder or index than WHEELS
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",  # torch without CUDA
        "REPRO": "0",
        "BENCH": "0",
    }
    env.pop("KEEP_INSTALLED", None)
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr, done.stderr[-2000:]
    site = list((project / ".venv-gpu/lib").glob("python*/site-packages"))
    assert site and not (site[0] / "torch").exists()


def test_the_packages_a_gpu_image_keeps_are_named_with_where_they_are():
    """KEEP_INSTALLED=1: each of the machine's packages kept instead of the lock's,
    at its version or another, is named on stderr with its folder, as not
    hash-checked."""
    done = subprocess.run(
        [sys.executable, "scripts/lock_subset.py", "requirements.lock", "--missing"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    import pandas

    line = f"keeping the machine's pandas {pandas.__version__} ("
    kept = [row for row in done.stderr.splitlines() if row.startswith(line)]
    assert len(kept) == 1, done.stderr[:500]
    assert kept[0].endswith(f"from {Path(pandas.__path__[0]).parent}, not hash-checked")
    assert "\npandas==" not in "\n" + done.stdout


def test_the_gpu_image_s_own_torch_is_kept_by_name_and_the_rest_hash_checked():
    """Where python3 has a CUDA torch, gpu_check.sh says it keeps it and prints its
    origin, and installs the lock into the venv with --ignore-installed, so a
    machine package at the lock's version is not taken as satisfied unchecked."""
    script = (PROJECT_ROOT / "scripts/gpu_check.sh").read_text()
    image = script[script.index("if python3 -c") : script.index("\nelse\n")]
    assert "keeping the machine's torch" in image.replace("'\"'\"'", "'")
    assert "torch.__path__[0]" in image and "not hash-checked" in image
    assert "fresh=(--ignore-installed)" in image
    installs = [line for line in script.splitlines() if "pip install" in line]
    assert installs and all("--require-hashes" in line for line in installs)
