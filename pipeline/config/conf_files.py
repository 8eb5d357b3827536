"""conf/'s experiment parts, written from the experiments' config modules, so that each
default is written once, in its `Settings` dataclass.

`python -m pipeline.params --defaults` writes, for each experiment of
pipeline/core/kinds.py's EXPERIMENTS, conf/<name>/lesson.yaml (its Settings' defaults,
with the class docstring and the fields' comments as YAML comments) and the
experiments' lines of conf/config.yaml (its defaults list and its paths, between
marker comments). conf/ stays plain YAML, since DVC composes it without importing
pipeline/; a test checks that the committed files are what this writes.
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
from typing import Any

import yaml

from pipeline.core.kinds import EXPERIMENTS, experiment_part

OPTION = "lesson"  # each experiment group's one option: the lesson's settings
BEGIN, END = "# experiments: begin", "# experiments: end"
NOTE = "written by `python -m pipeline.params --defaults`"


def default_of(item: Any) -> Any:
    """A dataclass field's default value, through its factory where it has one."""
    value = item.default_factory() if item.default is MISSING else item.default
    return to_plain(value)


def to_plain(value: Any) -> Any:
    """Dataclass instances (a grid cell) as dicts, recursively: what YAML can write."""
    if hasattr(value, "__dataclass_fields__"):
        return {item.name: to_plain(getattr(value, item.name)) for item in fields(value)}
    if isinstance(value, dict):
        return {key: to_plain(entry) for key, entry in value.items()}
    if isinstance(value, list):
        return [to_plain(entry) for entry in value]
    return value


def field_comments(settings: type) -> dict[str, tuple[list[str], str]]:
    """Each field's comment lines above it and its trailing comment, from the source."""
    source = textwrap.dedent(inspect.getsource(settings))
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


def settings_yaml(settings: type) -> str:
    """conf/<name>/lesson.yaml: the docstring as a header, then each field's default,
    its comments kept."""
    header = inspect.cleandoc(settings.__doc__ or "").splitlines()
    lines = [f"# {line}".rstrip() for line in header]
    comments = field_comments(settings)
    for item in fields(settings):
        above, trailing = comments.get(item.name, ([], ""))
        lines += [f"# {comment}" for comment in above]
        text = field_yaml(item.name, default_of(item))
        first, *rest = text.split("\n")
        lines.append(f"{first}  # {trailing}" if trailing else first)
        lines += rest
    return "\n".join(lines) + "\n"


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
    """conf/config.yaml with its experiments' defaults and paths lines written."""
    configs = {name: experiment_part(name, "config") for name in EXPERIMENTS}
    head, paths = text.split("\npaths:\n", 1)
    head = marked_block(head + "\n", "  ", [f"- {name}: {OPTION}" for name in configs], "defaults")
    entries = [
        f"{key}: {path}" for config in configs.values() for key, path in config.PATHS.items()
    ]
    return head.removesuffix("\n") + "\npaths:\n" + marked_block(paths, "  ", entries, "paths")


def written(conf_dir: Path) -> dict[Path, str]:
    """Every file of conf/ this module writes, with its text."""
    files = {
        conf_dir / name / f"{OPTION}.yaml": settings_yaml(experiment_part(name, "config").Settings)
        for name in EXPERIMENTS
    }
    config = conf_dir / "config.yaml"
    files[config] = config_yaml(config.read_text())
    return files
