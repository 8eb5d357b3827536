"""conf/, written from the code that declares each default, so that each default is
written once.

`python -m pipeline.params --defaults` writes

- each base group's option that conf/config.yaml's defaults list picks
  (conf/data/lesson.yaml, conf/train/lesson.yaml, conf/eval/lesson.yaml,
  conf/tracking/local.yaml) from its dataclass in pipeline/config/schema.py;
- every option of the plug-in groups, model and task: one per module of the group's
  registry in pipeline/core/kinds.py (conf/model/<kind>.yaml, conf/task/<kind>.yaml),
  from the module and the group's dataclass (`plug_in_yaml`);
- for each experiment of the registry's EXPERIMENTS, conf/<name>/lesson.yaml from its
  Settings;
- conf/config.yaml's paths (schema.py's BasePaths, each experiment's PATHS between
  marker comments, then StatePaths) and its experiments' lines of the defaults list
  (between marker comments).

A dataclass's docstring and its fields' comments become the YAML's comments. The rest
of conf/config.yaml (the base groups' picks, Hydra's settings) is written by hand.
conf/ stays plain YAML, since DVC composes it without importing pipeline/; a test
checks that the committed files are what this writes.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import textwrap
import tokenize
from dataclasses import MISSING, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from pipeline.config.schema import BasePaths, Config, StatePaths
from pipeline.core.kinds import EXPERIMENTS, MODEL_KINDS, TASKS, declared, experiment_part

OPTION = "lesson"  # each experiment group's one option: the lesson's settings
BEGIN, END = "# experiments: begin", "# experiments: end"
NOTE = "written by `python -m pipeline.params --defaults`"
# The groups with one option per plug-in module, by the registry that names them.
PLUG_INS: dict[str, dict[str, str | ModuleType]] = {"model": MODEL_KINDS, "task": TASKS}


def default_of(item: Any) -> Any:
    """A dataclass field's default value, through its factory where it has one."""
    value = item.default_factory() if item.default is MISSING else item.default
    return to_plain(value)


def defaults(settings: type) -> dict[str, Any]:
    """Every field's default, in the dataclass's order."""
    return {item.name: default_of(item) for item in fields(settings)}


def to_plain(value: Any) -> Any:
    """Dataclass instances (a grid cell) as dicts, recursively: what YAML can write."""
    if hasattr(value, "__dataclass_fields__"):
        return {item.name: to_plain(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, dict):
        return {key: to_plain(entry) for key, entry in value.items()}
    if isinstance(value, list):
        return [to_plain(entry) for entry in value]
    return value


def class_source(settings: type) -> str:
    return textwrap.dedent(inspect.getsource(settings))


def docstring(settings: type) -> str:
    """The class's own docstring, "" where it has none (a dataclass's `__doc__` is then
    its signature)."""
    return ast.get_docstring(ast.parse(class_source(settings)).body[0]) or ""


def field_comments(settings: type) -> dict[str, tuple[list[str], str]]:
    """Each field's comment lines above it and its trailing comment, from the source."""
    source = class_source(settings)
    comments = {
        token.start[0]: (token.string.removeprefix("#").strip(), token.line.lstrip()[0] == "#")
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    found, above = {}, []
    body = ast.parse(source).body[0].body
    for node in body:
        if not isinstance(node, ast.AnnAssign):
            continue
        line = node.lineno
        above = []
        previous = line - 1
        while previous in comments and comments[previous][1]:
            above.insert(0, comments[previous][0])
            previous -= 1
        trailing = comments.get(line, ("", True))
        found[node.target.id] = (above, "" if trailing[1] else trailing[0])
    return found


def field_yaml(name: str, value: Any) -> str:
    """`name: value`: a list of scalars in one line, a mapping as a block of entries."""
    if isinstance(value, dict):
        return yaml.safe_dump({name: value}, default_flow_style=None, sort_keys=False).rstrip()
    text = yaml.safe_dump(value, default_flow_style=True, width=1000)
    return f"{name}: {text.split(chr(10) + '...')[0].strip()}"


def comment_lines(text: str) -> list[str]:
    """`text` as YAML comment lines."""
    return [f"# {line}".rstrip() for line in inspect.cleandoc(text).splitlines()]


def fields_lines(settings: type, values: dict[str, Any]) -> list[str]:
    """`values` (some of the dataclass's fields, in its order) as YAML lines, each
    field's comments kept."""
    comments = field_comments(settings)
    lines = []
    for name, value in values.items():
        above, trailing = comments.get(name, ([], ""))
        lines += [f"# {comment}" for comment in above]
        first, *rest = field_yaml(name, value).split("\n")
        lines.append(f"{first}  # {trailing}" if trailing else first)
        lines += rest
    return lines


def settings_yaml(settings: type) -> str:
    """A group's option (conf/<name>/lesson.yaml): the docstring as a header, then each
    field's default, its comments kept."""
    lines = comment_lines(docstring(settings)) + fields_lines(settings, defaults(settings))
    return "\n".join(lines) + "\n"


def plug_in_yaml(settings: type, registry: dict[str, str | ModuleType]) -> dict[str, str]:
    """A plug-in group's options (model, task), by kind: the module's docstring's first
    paragraph and its file as the header, then `kind` and the keys the kind alone reads
    (the module's OWN_KEYS) at the dataclass's defaults. The option of the dataclass's
    own kind sets every key that no kind owns too; every other option builds on it (a
    defaults list) where it sets any key but `kind`."""
    values = defaults(settings)
    modules = {kind: declared(module) for kind, module in registry.items()}
    owned = {kind: set(module.get("OWN_KEYS", ())) for kind, module in modules.items()}
    shared = set(values) - set().union(*owned.values())
    base = values["kind"]
    options = {}
    for kind, module in modules.items():
        keys = {"kind", *owned[kind], *(shared if kind == base else ())}
        summary = inspect.cleandoc(module.get("__doc__") or "").split("\n\n")[0]
        lines = [*comment_lines(summary), f"# ({module['__name__'].replace('.', '/')}.py)"]
        if kind != base and shared - {"kind"}:
            lines += ["defaults:", f"  - {base}", "  - _self_"]
        chosen = {key: value for key, value in values.items() if key in keys} | {"kind": kind}
        options[kind] = "\n".join(lines + fields_lines(settings, chosen)) + "\n"
    return options


def base_files(conf_dir: Path, config_text: str) -> dict[Path, str]:
    """The base groups' options: every option of a plug-in group, and for each other
    group the option that conf/config.yaml's defaults list (`config_text`) picks."""
    groups = {item.name: item.type for item in fields(Config)}
    files = {
        conf_dir / group / f"{kind}.yaml": text
        for group, registry in PLUG_INS.items()
        for kind, text in plug_in_yaml(groups[group], registry).items()
    }
    for entry in yaml.safe_load(config_text)["defaults"]:
        for group, option in entry.items() if isinstance(entry, dict) else ():
            if group in groups and group not in PLUG_INS and group not in EXPERIMENTS:
                files[conf_dir / group / f"{option}.yaml"] = settings_yaml(groups[group])
    return files


def marked_block(text: str, indent: str, entries: list[str], where: str) -> str:
    """`text` with the lines between the marker comments at `indent` replaced."""
    pattern = re.compile(
        rf"^{indent}{re.escape(BEGIN)}[^\n]*\n(.*?)^{indent}{re.escape(END)}\n", re.M | re.S
    )
    blocks = list(pattern.finditer(text))
    if len(blocks) != 1:
        raise ValueError(f"conf/config.yaml: no one `{BEGIN}` ... `{END}` block in {where}")
    block = blocks[0]
    body = "".join(f"{indent}{entry}\n" for entry in entries)
    new = f"{indent}{BEGIN} ({NOTE})\n{body}{indent}{END}\n"
    return text[: block.start()] + new + text[block.end() :]


def config_yaml(text: str) -> str:
    """conf/config.yaml with its experiments' defaults lines and its paths written."""
    configs = {name: experiment_part(name, "config") for name in EXPERIMENTS}
    head, rest = text.split("\npaths:\n", 1)
    head = marked_block(head + "\n", "  ", [f"- {name}: {OPTION}" for name in configs], "defaults")
    experiments = [
        f"{key}: {path}" for config in configs.values() for key, path in config.PATHS.items()
    ]
    lines = [
        *fields_lines(BasePaths, defaults(BasePaths)),
        f"{BEGIN} ({NOTE})",
        *experiments,
        END,
        *fields_lines(StatePaths, defaults(StatePaths)),
    ]
    paths = "".join(f"  {line}\n" for line in lines)
    end = re.match(r"(?:  .*\n)*", rest).end()  # the paths' lines, indented
    return head.removesuffix("\n") + "\npaths:\n" + paths + rest[end:]


def written(conf_dir: Path) -> dict[Path, str]:
    """Every file of conf/ this module writes, with its text."""
    files = {
        conf_dir / name / f"{OPTION}.yaml": settings_yaml(experiment_part(name, "config").Settings)
        for name in EXPERIMENTS
    }
    config = conf_dir / "config.yaml"
    files[config] = config_yaml(config.read_text())
    files.update(base_files(conf_dir, files[config]))
    return files
