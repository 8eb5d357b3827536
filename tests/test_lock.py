"""The dependency lock (requirements.lock, requirements-torch.txt) agrees with
pyproject.toml: every dependency is pinned to a version its range allows."""

from __future__ import annotations

import re
import tomllib

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


def project_requirements() -> list[Requirement]:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] + [
        r for extra in project["optional-dependencies"].values() for r in extra
    ]
    return [Requirement(r) for r in listed]


def test_every_pyproject_dependency_is_pinned_within_its_range():
    locked = pins("requirements.lock") | pins("requirements-torch.txt")
    for requirement in project_requirements():
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement.name} is not in the lock: run `bash scripts/lock.sh`"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"the lock pins {name}=={locked[name]}, outside pyproject's {requirement}: "
            "run `bash scripts/lock.sh`"
        )


def test_lock_is_fully_hashed_and_leaves_torch_to_its_own_file():
    text = (PROJECT_ROOT / "requirements.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
    assert len(entries) > 50
    for entry in entries:
        if entry.startswith("#") or not entry.strip():
            continue
        assert PIN.match(entry) and "--hash=sha256:" in entry, entry.splitlines()[0]
    assert "torch" not in pins("requirements.lock")
    assert list(pins("requirements-torch.txt")) == ["torch"]
    # CUDA-only packages come with a CUDA build of torch, never from the lock.
    assert not [
        name for name in pins("requirements.lock") if name.startswith(("nvidia-", "triton"))
    ]


def test_ci_and_the_readme_install_from_the_lock():
    steps = [
        "install -r requirements-torch.txt",
        "install --require-hashes --no-deps -r requirements.lock",
        "install --no-deps --no-build-isolation -e .",
    ]
    ci = (PROJECT_ROOT / ".ci/run").read_text()
    readme = (PROJECT_ROOT / "README.md").read_text()
    for step in steps:
        assert step in ci.replace("-q ", ""), step
        assert readme.count(step) >= 2, step  # both of the README's two commands
    assert 'install -e ".[dev]"' not in ci + readme
