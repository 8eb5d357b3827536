"""`python -m pipeline check-params` (pipeline/config/pulled.py): a pulled
experiment's params.yaml, read from git without expanding an alias."""

from __future__ import annotations

import subprocess

import pytest

from pipeline.config import PROJECT_ROOT


def _repo_with_params(tmp_path, text: str, ref: str):

    repo = tmp_path / "repo"
    repo.mkdir()
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    (repo / "params.yaml").write_text(text)
    run("add", "params.yaml")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "exp")
    run("update-ref", ref, "HEAD")
    return repo


def test_check_params_refuses_a_pulled_experiment_s_alias_bomb_without_expanding_it(
    tmp_path, monkeypatch, capsys
):
    """Issue 60, case 8: DVC expands a pulled params.yaml's aliases before any stage runs
    (`dvc status` hung past 90 s); `check-params` reads it from git, unexpanded."""
    from pipeline.config import pulled

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    ref = "refs/exps/ab/cdef0123/bomb-exp"
    repo = _repo_with_params(tmp_path, "\n".join(levels) + "\n", ref)
    monkeypatch.chdir(repo)
    with pytest.raises(SystemExit) as exit_:
        pulled.main(["bomb-exp"])  # the experiment's name, resolved to its ref
    message = str(exit_.value.code)
    assert message.startswith(f"error: invalid YAML in {ref}:params.yaml line 2")
    assert "an alias (*a0)" in message and "\n" not in message


def test_check_params_passes_the_project_s_own_params_and_names_a_missing_revision(
    tmp_path, monkeypatch, capsys
):
    from pipeline.config import pulled

    repo = _repo_with_params(
        tmp_path, (PROJECT_ROOT / "params.yaml").read_text(), "refs/exps/ab/cd/good"
    )
    monkeypatch.chdir(repo)
    pulled.main(["good"])
    assert "no alias, one reading for every key" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no params.yaml at 'nope'"):
        pulled.main(["nope"])
