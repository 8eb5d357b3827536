"""The dependency locks (requirements.lock for the main job, requirements-dev.lock
for the tests, requirements-torch.txt) agree with pyproject.toml and each other:
every dependency is pinned to a version its range allows, in the lock that
installs it, and the two locks pin the same versions."""

from __future__ import annotations

import re
import tomllib

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
    # CUDA-only packages come with a CUDA build of torch, never from the lock.
    assert not [name for name in pins(lock) if name.startswith(("nvidia-", "triton"))]


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
        assert "install -r requirements-torch.txt" in command
        assert "install --no-deps --no-build-isolation -e ." in command
    assert "install --require-hashes --no-deps -r requirements-dev.lock" in ci
    assert "install -r requirements-torch.txt" in ci
    assert 'install -e ".[dev]"' not in ci + readme
