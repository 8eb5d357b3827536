"""What each light entry point loads: one fresh interpreter for every probe.

The modules are imported from the lightest to the heaviest, so each step sees only
what its own imports added. The track stage runs on every `dvc repro` and must
start fast; the generate stage needs no torch; only the modules in
pipeline/tracking/ talk to MLflow and only pipeline.figures draws.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import networkx as nx

from pipeline.config import PROJECT_ROOT

HEAVY = ("matplotlib", "mlflow", "pandas", "torch")
STEPS = [
    ("pipeline.stages.track",),
    ("pipeline.stages.generate",),
    (
        "pipeline.data",
        "pipeline.models.lesson",
        "pipeline.models.train",
        "pipeline.analysis.metrics",
        "pipeline.reporting.report",
        "pipeline.stages.evaluate",
        "pipeline.stages.train",
    ),
]
PROBE = """
import importlib, json, sys
loaded = []
for modules in json.loads(sys.argv[1]):
    for module in modules:
        importlib.import_module(module)
    loaded.append(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules))
print(json.dumps(loaded))
"""


def test_light_entry_points_load_no_heavy_library():
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(STEPS), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    track, generate, lesson = json.loads(result.stdout)
    assert track == []
    assert generate == ["pandas"]
    assert "mlflow" not in lesson and "matplotlib" not in lesson


def test_only_modules_in_pipeline_tracking_import_mlflow():
    tracking = PROJECT_ROOT / "pipeline" / "tracking"
    for path in (PROJECT_ROOT / "pipeline").rglob("*.py"):
        source = path.read_text()
        if tracking not in path.parents:
            assert "import mlflow" not in source and "from mlflow" not in source, path


def module_names() -> dict[str, Path]:
    """Every module of pipeline/ by its dotted name (a package by its own)."""
    names = {}
    for path in (PROJECT_ROOT / "pipeline").rglob("*.py"):
        parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def import_graph() -> nx.DiGraph:
    """An edge from each module to each project module it imports, wherever in the
    file (inside functions too). `from pipeline.models import parameters` imports the
    module pipeline.models.parameters; `from pipeline.models import kind_module`, the
    package. A module's parent packages are not edges: Python runs them first, and
    a package that gathers its submodules' names is not a circle."""
    names = module_names()
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    for name, path in names.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    targets.append(submodule if submodule in names else node.module)
            graph.add_edges_from((name, target) for target in targets if target in names)
    return graph


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph()
    assert graph.has_edge("pipeline.memory.sizes", "pipeline.models.interface")  # the graph sees
    assert graph.has_edge("pipeline.experiments.grid.stage", "pipeline.memory")
    circles = [" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph)]
    assert not circles, circles


def test_the_config_imports_neither_torch_nor_the_models():
    graph = import_graph()
    config = [name for name in graph if name.startswith("pipeline.config")]
    reached = set().union(*(nx.descendants(graph, name) for name in config))
    assert not any(name.startswith("pipeline.models") for name in reached), sorted(reached)
    every_config_module = "; ".join(f"import {name}" for name in config)
    blocked = f"import sys; sys.modules['torch'] = None; {every_config_module}"
    result = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# pipeline/'s folders from the bottom up (docs/architecture.md): a module imports only
# from its own folder or one below. The top-level modules: `data` sits above the
# config, the commands (`__main__`, `run`, `study`, `params`, `sharing`) on top. The
# frameworks below `experiments` find an experiment by name, never by an import.
LAYERS = [
    ("core",),
    ("tasks",),
    ("config",),
    ("data",),
    ("models",),
    ("memory",),
    ("analysis",),
    ("reporting",),
    ("tracking",),
    ("scaleout",),
    ("browse",),
    ("stages",),
    ("experiments",),
    ("__main__", "run", "study", "params", "sharing"),
]


def layer(module: str) -> int:
    """The index in LAYERS of a module's folder (or top-level module's name)."""
    parts = module.split(".")
    if len(parts) == 1:  # the package itself: its __init__ pins the numerics, from core
        return 0
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


def arrows_up(graph: nx.DiGraph) -> list[str]:
    return sorted(
        f"{source} -> {target}"
        for source, target in graph.edges
        if target != "pipeline" and layer(target) > layer(source)
    )


def test_every_module_sits_in_a_layer():
    assert all(layer(name) >= 0 for name in module_names())


def test_no_folder_imports_one_above_it():
    assert not arrows_up(import_graph())


def test_an_arrow_up_is_seen():
    # The two arrows of before the core moved: a primitive reaching up to the config,
    # and the memory bound and the analysis importing each other.
    graph = import_graph()
    graph.add_edge("pipeline.core.files", "pipeline.config.schema")
    graph.add_edge("pipeline.memory.battery", "pipeline.analysis.faithfulness")
    assert arrows_up(graph) == [
        "pipeline.core.files -> pipeline.config.schema",
        "pipeline.memory.battery -> pipeline.analysis.faithfulness",
    ]
