"""One value for one key: params.yaml and conf/ read alike by YAML 1.1 and YAML 1.2.

The stages, Hydra and OmegaConf read YAML 1.1 (PyYAML); DVC reads params.yaml as
YAML 1.2 (ruamel.yaml) for dvc.lock, `dvc params diff` and `dvc exp show`. A few
plain scalars differ between the two: `040` is 32 (octal) for the stages and 40 for
DVC, `yes`/`no`/`on`/`off` are booleans for one and strings for the other, `1:30` is
90 or a string, `0o17` a string or 15, `2001-12-14` a string or a date. A stage then
computes, and logs to MLflow, another value than DVC records. Each file is read both
ways, as each reader reads it, and the first key whose values differ is refused in
one line: a value written so that both read it alike is the only fix that keeps
dvc.lock and the runs in agreement.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from pipeline.core.errors import ConfigError


def yaml_1_2(text: str) -> Any:
    """The document as DVC reads params.yaml (dvc.utils.serialize.parse_yaml: ruamel's
    safe loader, YAML 1.2 unless the file says otherwise)."""
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(text)


def yaml_1_1(text: str) -> Any:
    """The document as OmegaConf.load (and so Hydra and the stages) reads it: PyYAML with
    OmegaConf's resolvers (`1e3` a float, no timestamps), without building a config."""
    from omegaconf._utils import get_yaml_loader  # what OmegaConf.load parses with

    return yaml.load(text, Loader=get_yaml_loader())  # noqa: S506 (a SafeLoader's subclass)


def _same(old: Any, new: Any) -> bool:
    """Equal and of one type (1, 1.0 and True are equal in Python, not in a config)."""
    if isinstance(old, float) and isinstance(new, float) and math.isnan(old):
        return math.isnan(new)
    return type(old) is type(new) and old == new


def first_difference(old: Any, new: Any, path: tuple = ()) -> tuple | None:
    """The first value the two readings of one document disagree on: (path, the keys
    and list positions as read the first way; both values; whether it is a key that
    differs); None where they agree."""
    if isinstance(old, dict) and isinstance(new, dict) and len(old) == len(new):
        for (key, value), (other_key, other) in zip(old.items(), new.items(), strict=True):
            if not _same(key, other_key):  # a key itself (`on:`) read two ways
                return (*path, key), key, other_key, True
            found = first_difference(value, other, (*path, key))
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (value, other) in enumerate(zip(old, new, strict=True)):
            found = first_difference(value, other, (*path, index))
            if found:
                return found
        return None
    return None if _same(old, new) else (path, old, new, False)


def _scalar_text(text: str, path: tuple, is_key: bool) -> tuple[str, int] | None:
    """The written text and line of the scalar at `path` (of its key, `is_key`), found
    in yaml's node tree, which constructs nothing but the keys it compares."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    loader = yaml.SafeLoader("")
    for step in path:
        if isinstance(node, yaml.MappingNode):
            pairs = [(k, v) for k, v in node.value if _same(loader.construct_object(k), step)]
            if not pairs:
                return None
            key_node, node = pairs[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            key_node, node = None, node.value[step]
        else:
            return None
    node = key_node if is_key else node
    if not isinstance(node, yaml.ScalarNode):
        return None
    return node.value, node.start_mark.line + 1


def dotted(path: tuple, prefix: str = "") -> str:
    key = prefix
    for step in path:
        index = isinstance(step, int) and not isinstance(step, bool)
        key += f"[{step}]" if index else f"{'.' if key else ''}{step}"
    return key or "(the document)"


def check_one_reading(text: str, read: Any, shown: Path, prefix: str = "") -> None:
    """Refuse a file whose YAML 1.1 reading (`read`: `yaml_1_1(text)`, which its caller
    has) and YAML 1.2 reading differ, in one line naming the key (`prefix`: a config
    group's, for a file of conf/<group>/), the file, the line and both values."""
    try:
        new = yaml_1_2(text)
    except Exception as err:  # noqa: BLE001 - ruamel's errors share no base with PyYAML's
        problem = " ".join(str(err).split())
        raise ConfigError(
            f"invalid YAML in {shown}: DVC (YAML 1.2) cannot read it: {problem}"
        ) from None
    found = first_difference(read, new)
    if found is None:
        return
    keys, old, now, is_key = found
    written = _scalar_text(text, keys, is_key) if keys else None
    where = f" line {written[1]}" if written else ""
    literal = f" {written[0]!r}" if written else ""
    raise ConfigError(
        f"invalid config value {dotted(keys, prefix)}:{literal} in {shown}{where} reads as "
        f"{old!r} in YAML 1.1 (the stages, Hydra, MLflow's params) but {now!r} in YAML 1.2 "
        "(DVC: dvc.lock, `dvc params diff`); write it so both read one value: a number "
        "without leading zeros or colons, true/false, or a quoted string"
    )
