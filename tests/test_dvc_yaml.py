"""dvc.yaml's code deps: each stage lists every project module it imports.

A module a stage imports but does not list would not rerun the stage when it
changes, so a stale output could pass as current. The imports are read from the
source (function-level ones too), from each stage's entry point outwards.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT
from pipeline.provenance import stages


def module_file(name: str) -> Path | None:
    base = PROJECT_ROOT / name.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def project_imports(path: Path) -> set[str]:
    """The `pipeline.*` modules a source file imports, wherever in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("pipeline")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pipeline"):
            found.add(node.module)
            # `from pipeline import study` imports the module pipeline.study
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def registered_kinds() -> list[str]:
    """The model kinds' modules: pipeline.models imports them by name, on use."""
    from pipeline.kinds import MODEL_KINDS

    return [module for module in MODEL_KINDS.values() if isinstance(module, str)]


def import_closure(module: str) -> set[str]:
    """Every project file that importing `module` may load, parent packages included
    (and every registered model kind, once pipeline.models is among them)."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = module_file(name)
        if path is None or path in seen:
            continue
        seen.add(path)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += project_imports(path)
        if name == "pipeline.models":
            todo += registered_kinds()
    return {path.relative_to(PROJECT_ROOT).as_posix() for path in seen}


def listed(deps: list[str], path: str) -> bool:
    return any(path == dep or path.startswith(dep.rstrip("/") + "/") for dep in deps)


@pytest.mark.parametrize("stage", list(stages()))
def test_each_stage_lists_every_module_it_imports(stage):
    spec = stages()[stage]
    spec = spec.get("do", spec)  # a foreach stage: every item runs the same command
    module = spec["cmd"].removeprefix("python -m ").split()[0]
    deps = [dep if isinstance(dep, str) else next(iter(dep)) for dep in spec["deps"]]
    missing = sorted(p for p in import_closure(module) if not listed(deps, p))
    assert not missing, f"dvc.yaml stage {stage} misses code deps: {missing}"


@pytest.mark.parametrize("stage", list(stages()))
def test_each_stage_lists_no_code_it_does_not_import(stage):
    """A listed module or folder that the stage never loads would rerun it for
    nothing: a change in pipeline/models/ must not regenerate the data."""
    spec = stages()[stage]
    spec = spec.get("do", spec)
    module = spec["cmd"].removeprefix("python -m ").split()[0]
    code = [dep for dep in spec["deps"] if isinstance(dep, str) and dep.startswith("pipeline/")]
    closure = import_closure(module)
    unused = [dep for dep in code if not any(listed([dep], path) for path in closure)]
    assert not unused, f"dvc.yaml stage {stage} lists code it does not import: {unused}"


def test_the_closure_follows_function_level_imports_and_registered_kinds():
    """The memory bound reaches every model kind through the registry: all are deps
    of a stage that computes; the generate stage reaches no model."""
    closure = import_closure("pipeline.stages.train")
    assert "pipeline/memory/stages.py" in closure
    assert {"pipeline/models/lesson.py", "pipeline/models/window.py"} <= closure
    generate = import_closure("pipeline.stages.generate")
    assert not any(path.startswith("pipeline/models/") for path in generate)
    assert not any(path.startswith("pipeline/memory/") for path in generate)
    assert "pipeline/tracking/runs.py" in import_closure("pipeline.stages.track")
