"""dvc.yaml, generated in two parts: the experiments' stages from their folders, and
every stage's code deps from its imports.

Each experiment's stages are written in its folder (pipeline/experiments/<name>/
stage.yaml, as under dvc.yaml's `stages:`, without code deps); `python -m
pipeline.params` writes them between dvc.yaml's marker comments, in the order of
pipeline/core/kinds.py's EXPERIMENTS.

A module a stage loads but does not list would not rerun the stage when it changes,
so a stale output could pass as current; a listed one it never loads reruns it for
nothing. So the code deps are not written by hand: `python -m pipeline.params`
rewrites each stage's `pipeline/...` lines from its import closure, read from the
source (function-level imports too), from its entry point outwards, following the
plug-ins a framework finds by name (pipeline/core/kinds.py): every model kind where
the models are loaded, and each experiment's part where a framework reads its
results (its section where the report is, its tracked numbers where tracking is).

One line per folder of pipeline/ the stage loads from, except the stages' own
modules and the experiments' parts, which are listed file by file (a change in one
stage or experiment reruns that one), and the stage's own experiment folder whole.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline.core.kinds import EXPERIMENTS, MODEL_KINDS
from pipeline.core.paths import PROJECT_ROOT

BEGIN, END = "  # experiments: begin", "  # experiments: end"
STAGE_FILE = "stage.yaml"  # an experiment's stages, in its folder

# The frameworks that read what the experiments write, and the parts of each they load
# (a part an experiment does not have is skipped). Every stage also loads every
# experiment's config and memory terms (the config's checks, the memory bound), but
# those decide only whether a stage runs, never what it writes: they are no stage's
# deps but their own experiment's, so that adding an experiment reruns nothing else.
EXPERIMENT_READERS = {
    "pipeline.reporting.report": ("section",),
    "pipeline.reporting.headline": ("section",),
    "pipeline.reporting.answer": ("summary",),
    "pipeline.tracking.runs": ("tracked",),
    "pipeline.config.results": ("", "results"),  # DOCUMENT and SHAPE, or read(cfg)
}
FILE_BY_FILE = ("pipeline/stages/", "pipeline/experiments/")
CODE_LINE = re.compile(r"^( *)- pipeline/\S*\n", re.M)


def module_file(name: str, root: Path = PROJECT_ROOT) -> Path | None:
    base = root / name.replace(".", "/")
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


def found_by_name(module: str) -> list[str]:
    """The plug-ins `module` loads by name: every model kind where the models are,
    each experiment's part where a framework that reads it is."""
    if module == "pipeline.models":
        return [kind for kind in MODEL_KINDS.values() if isinstance(kind, str)]
    parts = EXPERIMENT_READERS.get(module, ())
    return [f"{package}.{part}".rstrip(".") for package in EXPERIMENTS.values() for part in parts]


def import_closure(module: str, root: Path = PROJECT_ROOT) -> set[str]:
    """Every project file (relative path) that running `module` may load, parent
    packages and the plug-ins found by name included."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = module_file(name, root)
        if path is None or path in seen:
            continue
        seen.add(path)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += project_imports(path)
        todo += found_by_name(name)
    return {path.relative_to(root).as_posix() for path in seen}


def dep_entry(path: str, own: str | None) -> str:
    """The dvc.yaml line that covers `path`: its folder, or the file itself (a top-level
    module, a stage's, another experiment's part)."""
    if own is not None and path.startswith(own):
        return own
    parts = path.split("/")
    if len(parts) == 2 or path.startswith(FILE_BY_FILE):
        return path
    return f"{parts[0]}/{parts[1]}/"


def code_deps(module: str, root: Path = PROJECT_ROOT) -> list[str]:
    """A stage's code deps, sorted: its closure at dvc.yaml's granularity."""
    parts = module.split(".")
    own = "/".join(parts[:3]) + "/" if parts[1] == "experiments" else None
    return sorted({dep_entry(path, own) for path in import_closure(module, root)})


def stage_module(spec: dict) -> str:
    """The module a dvc.yaml stage runs (`cmd: python -m MODULE`)."""
    spec = spec.get("do", spec)  # a foreach stage: every item runs the same command
    return spec["cmd"].removeprefix("python -m ").split()[0]


def deps_end(block: str) -> int | None:
    """Where a stage's `deps:` list ends in its text (after its last item), or None."""
    head = re.search(r"^( *)deps:\n", block, re.M)
    if head is None:
        return None
    end, indent = head.end(), len(head[1])
    for line in re.finditer(r"^( *)(\S.*)?\n", block[head.end() :], re.M):
        if line[2] is not None and len(line[1]) <= indent:
            break
        if line[2] is not None and line[2].startswith("- "):
            end = head.end() + line.end()
    return end


def with_code_deps(text: str, stages: dict[str, dict], root: Path = PROJECT_ROOT) -> str:
    """dvc.yaml's text with each stage's `- pipeline/...` lines replaced by its
    generated code deps (appended to its deps where it lists none), every other byte
    kept."""
    out, rest = [], text
    for name, spec in stages.items():
        head = re.search(rf"^  {re.escape(name)}:\n", rest, re.M)
        if head is None:
            raise ValueError(f"dvc.yaml: stage {name} not found at the top level of stages")
        out.append(rest[: head.end()])
        rest = rest[head.end() :]
        following = re.search(r"^  \S", rest, re.M)
        split = len(rest) if following is None else following.start()
        block, rest = rest[:split], rest[split:]
        block = CODE_LINE.sub("", block)
        end = deps_end(block)
        if end is None:
            out.append(block)
            continue
        indent = re.search(r"^( *)deps:\n", block, re.M)[1] + "  "
        generated = "".join(f"{indent}- {dep}\n" for dep in code_deps(stage_module(spec), root))
        out.append(block[:end] + generated + block[end:])
    return "".join(out) + rest


def experiment_stages(root: Path = PROJECT_ROOT) -> str:
    """The experiments' stages as dvc.yaml holds them: each folder's stage.yaml, indented
    under `stages:`, a blank line apart."""
    parts = []
    for package in EXPERIMENTS.values():
        text = (root / package.replace(".", "/") / STAGE_FILE).read_text().rstrip("\n")
        parts.append("\n".join(f"  {line}" if line else "" for line in text.split("\n")))
    return "\n\n".join(parts) + "\n"


def with_experiment_stages(text: str, root: Path = PROJECT_ROOT) -> str:
    """dvc.yaml's text with the lines between its experiments' markers written."""
    pattern = re.compile(rf"^{re.escape(BEGIN)}[^\n]*\n.*?^{re.escape(END)}\n", re.M | re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"dvc.yaml: no one `{BEGIN.strip()}` ... `{END.strip()}` block")
    block = f"{BEGIN} (written by `python -m pipeline.params`)\n{experiment_stages(root)}{END}\n"
    return pattern.sub(lambda _: block, text)


def generated(text: str, root: Path = PROJECT_ROOT) -> str:
    """dvc.yaml as `python -m pipeline.params` writes it from `text`."""
    import yaml

    text = with_experiment_stages(text, root)
    return with_code_deps(text, yaml.safe_load(text)["stages"], root)
