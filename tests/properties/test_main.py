"""`python -m pipeline COMMAND`: the commands beside the DVC stages."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.__main__ import COMMANDS
from pipeline.config import PROJECT_ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=PROJECT_ROOT, capture_output=True, text=True
    )


def test_alone_it_lists_every_command_with_its_first_line():
    result = run()
    assert result.returncode == 2
    for command in COMMANDS:
        assert f"\n  {command} " in result.stdout
    assert "How the run-to-run gap moved across versions" in result.stdout


def test_an_unknown_command_is_one_line_naming_the_allowed():
    result = run("nope")
    assert result.returncode == 1
    assert result.stderr == f"error: unknown command 'nope'; allowed: {', '.join(COMMANDS)}\n"


def test_a_command_s_help_names_it_as_typed():
    result = run("diff", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: python -m pipeline diff ")


# What no command may write (issue 49, item 4): the store, the params, DVC's
# pipeline, a conf/ file, a source and a stage output, inside a project of their own.
PROTECTED_TARGETS = (
    "mlflow.db",
    "params.yaml",
    "dvc.yaml",
    "conf/config.yaml",
    "pipeline/run.py",
    "reports/metrics.json",
)
# Every option that names a path and is no Writes: read, never written.
READ_OPTIONS = {("merge_study", "sweep_dir"), ("history", "sweep")}


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project root with a file at each of PROTECTED_TARGETS, as the current folder."""
    from pipeline.core import files

    root = tmp_path / "project"
    for number, name in enumerate(PROTECTED_TARGETS):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(f"{name}'s bytes {number}\n".encode())
    monkeypatch.setattr(files, "PROJECT_ROOT", root)
    monkeypatch.chdir(root)
    return root


def command_parsers(monkeypatch) -> dict[str, argparse.ArgumentParser]:
    """Each command's parser as its `main` builds it (stopped at parse_args)."""

    class Built(Exception):
        pass

    def stop(parser, args=None, namespace=None):
        raise Built(parser)

    parsers = {}
    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", stop)
        for command, module in COMMANDS.items():
            with pytest.raises(Built) as built:
                importlib.import_module(module).main([])
            parsers[command] = built.value.args[0]
    return parsers


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_no_command_writes_a_store_config_source_or_stage_output(project, monkeypatch):
    """Issue 49, item 4: `merge_study SWEEP --out mlflow.db` replaced the store, exit 0.
    Every writing option of every command (a Writes action in its parser) refuses each
    protected file in one line, before any work, and leaves it as it was."""
    from pipeline.core.files import Writes

    parsers = command_parsers(monkeypatch)
    writing = {(c, a) for c, p in parsers.items() for a in p._actions if isinstance(a, Writes)}
    paths = {(c, a.dest) for c, p in parsers.items() for a in p._actions if a.type is Path}
    assert paths - {(c, a.dest) for c, a in writing} == READ_OPTIONS  # none unclassified
    assert {(c, a.dest) for c, a in writing} >= {("merge_study", "out"), ("server", "dir")}
    (project.parent / "sweep").mkdir()
    before = snapshot(project)
    for command, action in writing:
        option = action.option_strings[0] if action.option_strings else action.dest.upper()
        for target in PROTECTED_TARGETS:
            argv = []
            for other in parsers[command]._actions:
                if other is action:
                    argv += [*action.option_strings[:1], target]
                elif other.required:  # the others a command needs: a folder outside
                    argv += [*other.option_strings[:1], str(project.parent / "sweep")]
            with pytest.raises(SystemExit) as exit_:
                importlib.import_module(COMMANDS[command]).main(argv)
            said = str(exit_.value.code)
            assert said.startswith(f"error: {option} {target}: not written there ("), argv
            assert "\n" not in said
            assert snapshot(project) == before, argv
