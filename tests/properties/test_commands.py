"""Every command of the project answers `--help` without side effects, and a bad
config group option is one line naming the allowed ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.__main__ import COMMANDS
from pipeline.config import PROJECT_ROOT
from pipeline.config.provenance import stages
from pipeline.stages.dvc_yaml import stage_module

STAGE_MODULES = sorted({stage_module(spec) for spec in stages().values()})


def run(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


HELP_ARGS = (
    [[module, "--help"] for module in STAGE_MODULES]
    + [["pipeline", command, "--help"] for command in COMMANDS]
    + [["pipeline.run", "--help"], ["pipeline.study", "--help"]]
)

# One interpreter imports the project and the heavy libraries its commands load
# (torch, pandas, matplotlib, mlflow, hydra, scipy) once, then forks a child per command that
# runs it as `python -m MODULE ARGS` would (runpy), in an empty folder of its own,
# its stdout and stderr to files: {command: [exit code, stdout, stderr]}.
FORKED_COMMANDS = """
import contextlib, json, os, runpy, sys
from pathlib import Path
import hydra, matplotlib.figure, mlflow, pandas, pipeline.stages, scipy.stats, torch  # noqa: F401
root, commands, results = Path(sys.argv[1]), json.loads(sys.argv[2]), {}
for number, (module, *args) in enumerate(commands):
    folder = root / str(number)
    folder.mkdir()
    out, err = root / f"{number}.out", root / f"{number}.err"
    pid = os.fork()
    if pid == 0:
        os.chdir(folder)
        with open(out, "w") as stdout, open(err, "w") as stderr:
            os.dup2(stdout.fileno(), 1), os.dup2(stderr.fileno(), 2)
        sys.argv, code = [module, *args], 0
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        with contextlib.suppress(Exception):
            sys.stdout.flush(), sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    results[" ".join(args[:-1]) or module] = [
        os.waitstatus_to_exitcode(status), out.read_text(), err.read_text(),
        sorted(path.name for path in folder.iterdir()),
    ]
print(json.dumps(results))
"""


def test_every_command_answers_help_and_touches_nothing(tmp_path):
    """Each run from an empty folder: a command that did its work would fail there
    (no params.yaml) or leave files behind."""
    import json

    result = run(["-c", FORKED_COMMANDS, str(tmp_path), json.dumps(HELP_ARGS)], tmp_path)
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    assert len(answers) == len(HELP_ARGS)
    for command, (code, stdout, stderr, left) in answers.items():
        assert code == 0, (command, stderr)
        assert stdout.strip() and "Traceback" not in stderr, (command, stdout, stderr)
        assert left == [], (command, left)


def test_the_params_command_answers_help_without_rewriting_params_yaml():
    params = PROJECT_ROOT / "params.yaml"
    before = (params.read_bytes(), params.stat().st_mtime_ns)
    result = run(["-m", "pipeline.params", "--help"], PROJECT_ROOT)
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m pipeline.params")
    assert (params.read_bytes(), params.stat().st_mtime_ns) == before


@pytest.mark.parametrize(("override", "group"), [("model=nope", "model"), ("task=nope", "task")])
def test_an_unknown_group_option_is_one_line_naming_the_allowed(override, group, tmp_path):
    result = run(["-m", "pipeline.run", override, f"hydra.run.dir={tmp_path}"], PROJECT_ROOT)
    options = sorted(path.stem for path in (PROJECT_ROOT / "conf" / group).glob("*.yaml"))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: invalid config value {override}: no conf/{group}/nope.yaml; "
        f"allowed: {', '.join(options)}\n"
    )
