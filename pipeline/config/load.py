"""Loading a config: Hydra's compose of conf/, params.yaml, the Hydra apps' start."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from pipeline.config.checks import validate
from pipeline.config.readings import check_one_reading, yaml_1_1
from pipeline.config.schema import CONF_DIR, PARAMS_FILE, PROJECT_ROOT, Config
from pipeline.config.store_choice import check_store_choice, project_roots
from pipeline.core.errors import ConfigError, PipelineError


def compose(overrides: list[str] | None = None) -> DictConfig:
    """Compose conf/ with Hydra's compose API (what `dvc exp run -S` does)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    check_conf_yaml()  # before Hydra reads conf/: a syntax error, a bomb, a bad byte
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=overrides or [])


def composed_yaml(overrides: list[str] | None = None) -> str:
    """params.yaml's bytes from conf/: Hydra's compose, resolved, OmegaConf.to_yaml
    (what DVC writes)."""
    cfg = compose(overrides)
    OmegaConf.resolve(cfg)
    validate(cfg)
    return OmegaConf.to_yaml(cfg)


def run_hydra_app(main: Callable[[], None]) -> None:
    """Start a Hydra app (`main`, decorated with hydra.main): a YAML syntax error in
    conf/ is one line on stderr and exit code 1, where Hydra prints a long traceback."""
    try:
        check_conf_yaml()
        check_hydra_dirs(sys.argv[1:])
        check_group_options(sys.argv[1:])
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    main()


HYDRA_DIRS = ("hydra.run.dir", "hydra.sweep.dir")


def parsed_overrides(argv: list[str]) -> list:
    """The command line's overrides as Hydra parses them; none where Hydra's grammar
    refuses them (Hydra then reports its own error)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(
            [arg for arg in argv if not arg.startswith("-")]
        )
    except HydraException:
        return []


def check_hydra_dirs(argv: list[str]) -> None:
    """Refuse a Hydra output folder inside the project's outputs or sources before Hydra
    creates it: `hydra.run.dir=reports` made `pipeline.run` replace reports/metrics.json.
    A folder outside the project is the caller's choice, as Hydra's own default is
    (docs/reliability.md says why)."""
    for override in parsed_overrides(argv):
        if override.key_or_group not in HYDRA_DIRS or override.is_sweep_override():
            continue
        literal = str(override.value()).split("${", 1)[0]  # before an interpolation
        check_job_folder(Path.cwd() / literal, f"{override.key_or_group}={override.value()!r}")


def check_job_folder(folder: Path, setting: str) -> None:
    """Refuse a Hydra job folder (`setting` names what made it) that is the project root
    or inside its outputs, sources or store; outside the project it is the caller's
    choice (docs/reliability.md, the third battery's case 12)."""
    from pipeline.core.files import PROTECTED_DIRS, protected

    if protected(folder):
        raise ConfigError(
            f"invalid config value {setting}: must not be the project root or inside "
            f"{', '.join(d + '/' for d in PROTECTED_DIRS)} (Hydra writes its job files "
            "there); use outputs/ or multirun/, or a folder outside the project"
        )


def check_group_options(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    """Refuse an option of a config group that conf/ does not have (`model=nope`) in one
    line naming the ones it has, where Hydra prints some 15 lines."""
    for override in parsed_overrides(argv):
        group = conf_dir / override.key_or_group
        if "." in override.key_or_group or not group.is_dir() or override.is_delete():
            continue
        options = sorted(path.stem for path in group.glob("*.yaml"))
        chosen = (
            list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
        )
        for option in chosen:
            if str(option) not in options:
                raise ConfigError(
                    f"invalid config value {override.key_or_group}={option}: no "
                    f"conf/{override.key_or_group}/{option}.yaml; allowed: {', '.join(options)}"
                )


def check_conf_yaml(conf_dir: Path = CONF_DIR) -> None:
    """Check every YAML file of conf/ (`checked_yaml`) before Hydra reads them: the
    first problem becomes a one-line ConfigError naming the file (Hydra would print a
    traceback, or expand an alias bomb for minutes)."""
    for path in sorted(conf_dir.rglob("*.yaml")):
        text = checked_yaml(path)
        try:
            read = yaml_1_1(text)  # what the events do not see: a tag, a duplicate anchor
        except yaml.YAMLError as err:
            raise ConfigError(yaml_error(path, err)) from None
        group = ".".join(path.parent.relative_to(conf_dir).parts)  # the keys' package
        check_one_reading(text, read, _shown(path), group)


def checked_yaml(path: Path, data: bytes | None = None) -> str:
    """The text of a YAML file of ours (params.yaml, conf/), refused in one line naming
    the file and the place when it is not UTF-8, not YAML, or uses an alias.

    An alias is refused outright: DVC writes none, conf/ has none, and OmegaConf copies
    every alias's value, so 9 levels of 9 aliases in a 2.5 kB file ran for minutes
    ("billion laughs"). The scan reads yaml's events, which never expand an alias.
    `data`: the file's bytes, where they come from elsewhere (a git revision)."""
    data = path.read_bytes() if data is None else data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - data.rfind(b"\n", 0, err.start)
        raise ConfigError(
            f"invalid YAML in {_shown(path)} line {line} column {column}: byte "
            f"0x{data[err.start]:02x} is not UTF-8; save the file as UTF-8"
        ) from None
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                raise ConfigError(
                    f"invalid YAML in {_shown(path)} line {mark.line + 1} column "
                    f"{mark.column + 1}: an alias (*{event.anchor}); params.yaml and conf/ "
                    "take none (DVC writes none): write the value out"
                )
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error(path, err)) from None
    return text


# The pure-Python parser, whose messages the one-line errors quote (libyaml's differ).
_LOADER = yaml.SafeLoader


def _shown(path: Path) -> Path:
    """A file of the project relative to its root, another as given."""
    try:
        return path.resolve().relative_to(PROJECT_ROOT)
    except ValueError:
        return path


def yaml_error(path: Path, err: yaml.YAMLError) -> str:
    name = _shown(path)
    mark = getattr(err, "problem_mark", None)
    where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or " ".join(str(err).split())
    context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
    if context and start:
        problem += f" ({context} from line {start.line + 1} column {start.column + 1})"
    return f"invalid YAML in {name}{where}: {problem}"


def load_params(path: Path | None = None, data: bytes | None = None) -> Config:
    """Read and validate params.yaml (the DVC stages' view of the config). `data`: its
    bytes from elsewhere (a git revision: `path` then only names it in messages)."""
    path = path or Path.cwd() / PARAMS_FILE
    if data is None and not path.exists():
        raise ConfigError(f"missing {path}: run `python -m pipeline.params` to write it")
    text = checked_yaml(path, data)
    try:
        read = yaml_1_1(text)
        _check_shape(path, read)
        raw = OmegaConf.create(read)  # what OmegaConf.load makes of it, parsed once
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error(path, err)) from None
    check_one_reading(text, read, _shown(path))  # DVC reads it as YAML 1.2
    try:
        cfg = validate(raw)
    except ConfigError as err:
        if data is not None:
            raise
        raise ConfigError(f"{err}{_rejected_value_hint(path)}") from None
    check_store_choice(cfg.tracking.uri, project_roots(path.absolute().parent), "params.yaml")
    return cfg


def _check_shape(path: Path, document: Any) -> None:
    """params.yaml is the whole composed config, every group of the schema: an empty
    file was read as the full-size defaults (and the data's provenance blamed), a list
    failed with `Index 'grid' (str) is not an int`."""
    groups = [item.name for item in fields(Config)]
    if isinstance(document, dict) and set(groups) <= set(document):
        return
    if not document:
        what = "is empty"
    elif not isinstance(document, dict):
        what = f"is a YAML {type(document).__name__}, not a mapping of the config's groups"
    else:
        what = f"lacks the groups {', '.join(g for g in groups if g not in document)}"
    raise ConfigError(
        f"{path} {what}: it is not the config `python -m pipeline.params` writes; run "
        "`python -m pipeline.params` to regenerate it from conf/"
    )


def _rejected_value_hint(path: Path) -> str:
    """Where params.yaml holds a refused value that conf/ does not: put params.yaml
    back as it was, or say how to.

    `dvc exp run -S` writes its values into the workspace's params.yaml before any
    stage runs, and leaves them there when a stage rejects one. In the workspace's
    `dvc exp run` (DVC_EXP_BASELINE_REV set) the params.yaml that the overrides
    replace is the baseline commit's (DVC composes conf/ with the overrides, so
    uncommitted edits are gone already): the stage writes that back, atomically.
    Elsewhere it only says what to run.
    """
    workspace = Path(os.environ.get("DVC_ROOT") or Path.cwd()).resolve()
    if path.resolve() != PROJECT_ROOT / PARAMS_FILE or workspace != PROJECT_ROOT:
        return ""  # a temporary copy of a queued experiment, or a file of a test
    baseline = os.environ.get("DVC_EXP_BASELINE_REV", "")
    before = _committed_params(baseline) if baseline else None
    if before is not None and path.read_text() != before:
        from pipeline.core.files import write_text  # pipeline.core.files reads the config

        write_text(path, before)
        return f" (params.yaml put back as it was, commit {baseline[:7]}'s)"
    try:
        from_conf = composed_yaml()
    except Exception:  # conf/ itself is invalid: its own error says where
        return ""
    if path.read_text() == from_conf:
        return ""
    return (
        " (params.yaml still holds this value, conf/ does not: a failed `dvc exp run -S` "
        "leaves it there; `python -m pipeline.params` restores params.yaml from conf/)"
    )


def _committed_params(rev: str) -> str | None:
    """params.yaml as commit `rev` has it; None where git cannot say."""
    import subprocess

    shown = subprocess.run(
        ["git", "show", f"{rev}:{PARAMS_FILE}"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    return shown.stdout if shown.returncode == 0 else None


def to_container(cfg: Config) -> dict:
    """The config as plain dicts and lists (what OmegaConf.to_container gives for a
    structured config, far cheaper: the track stage's no-op path calls it often;
    docs/speed.md)."""
    return asdict(cfg)


def flatten(tree: dict, prefix: str = "") -> dict[str, str]:
    """A nested config as {"group.key": value as text}, lists as JSON."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = json.dumps(value) if isinstance(value, list) else str(value)
    return flat
