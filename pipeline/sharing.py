"""Share an experiment: its git ref to a git remote, its DVC-cached files to the DVC
remote, and never a success over files left behind.

`dvc exp push` pushes an experiment's cached files to the DVC remote that the
experiment's own commit configures (DVC reads `.dvc/config` at that commit, plus
`.dvc/config.local`). An experiment run before the remote was added and committed
has none there: `dvc exp push` then reports the ref pushed and uploads 0 files, and
a colleague's `dvc exp apply` checks out that commit's `.dvc/config`, the remote's
lines deleted, so their `dvc pull` has no remote. This command checks the
experiment's commit first. Where the only change since the experiment's baseline
is the committed remote (`.dvc/config`), it moves the experiment onto that commit:
the same tree with the new `.dvc/config`, the same outputs, nothing recomputed.
Otherwise it refuses in one line and says what to run. After the push it asks the
remote for each of the experiment's cached files (docs/sharing.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.core.errors import PipelineError

CONFIG = ".dvc/config"


class SharingError(PipelineError):
    """An experiment that cannot be shared as asked; the message says what to run."""


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise SharingError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def default_remote(repo, rev: str) -> str | None:
    """The DVC remote `dvc exp push` uses for commit `rev`: its `.dvc/config`'s
    `core.remote`, or `.dvc/config.local`'s."""
    with repo.switch(rev):
        return repo.config["core"].get("remote")


def experiment_ref(repo, name: str):
    """The experiment's ref (an ExpRefInfo), refused in one line where there is none."""
    from dvc.repo.experiments.exceptions import AmbiguousExpRefInfo
    from dvc.repo.experiments.utils import resolve_name

    try:
        ref = resolve_name(repo.scm, name)[name]
    except AmbiguousExpRefInfo:
        raise SharingError(
            f"more than one experiment is named {name!r}: give its ref "
            "(`dvc exp list --all-commits --names-only`)"
        ) from None
    if ref is None:
        raise SharingError(f"no experiment named {name!r} here: `dvc exp list` names them")
    return ref


def onto_head(repo, ref):
    """Move experiment `ref` onto HEAD when HEAD differs from its baseline only in
    `.dvc/config` (the remote, committed after the experiment ran): a commit with the
    experiment's tree and HEAD's `.dvc/config`, HEAD its parent, author and date the
    experiment's. Returns the new ref; the old one is deleted."""
    from dvc.repo.experiments.refs import ExpRefInfo

    root = Path(repo.root_dir)
    head, baseline = git(root, "rev-parse", "HEAD"), ref.baseline_sha
    changed = set(git(root, "diff", "--name-only", baseline, head).split())
    descends = subprocess.run(
        ["git", "merge-base", "--is-ancestor", baseline, head], cwd=root, check=False
    )
    if descends.returncode != 0 or changed - {CONFIG}:
        raise SharingError(
            f"experiment {ref.name!r} ran before the DVC remote was committed, and HEAD "
            f"changed more than {CONFIG} since its baseline: run it again on HEAD "
            f"(`dvc exp run -n {ref.name}-shared -S ...`), then share that one"
        )
    commit = git(root, "rev-parse", str(ref))
    mode, _, blob = git(root, "ls-tree", head, CONFIG).split()[:3]
    author = git(root, "log", "-1", "--format=%an%n%ae%n%ad", commit).split("\n")
    message = git(root, "log", "-1", "--format=%B", commit)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(root, "read-tree", commit, env=env)
        git(root, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{CONFIG}", env=env)
        tree = git(root, "write-tree", env=env)
    who = dict(zip(("NAME", "EMAIL", "DATE"), author, strict=True))
    env = {
        **os.environ,
        **{f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in who.items()},
    }
    moved = git(root, "commit-tree", tree, "-p", head, "-m", message, env=env)
    new = ExpRefInfo(baseline_sha=head, name=ref.name)
    git(root, "update-ref", str(new), moved)
    git(root, "update-ref", "-d", str(ref))
    return new


def missing_in_remote(repo, rev: str, remote: str) -> list[str]:
    """The experiment's DVC-cached outputs that the remote lacks."""
    with repo.switch(rev):
        status = repo.status(cloud=True, remote=remote)
    return sorted(path for path, state in status.items() if state != "deleted")


def share(root: Path, git_remote: str, name: str) -> str:
    """Push experiment `name` to `git_remote` and its cached files to the DVC remote;
    returns the line to print."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        ref = experiment_ref(repo, name)
        remote = default_remote(repo, git(root, "rev-parse", str(ref)))
        moved = ""
        if remote is None:
            if repo.config["core"].get("remote") is None:
                raise SharingError(
                    "no DVC remote: add one and commit it (`dvc remote add -d storage URL && "
                    f"git add {CONFIG} && git commit -m 'DVC remote'`, docs/sharing.md), "
                    "then run this again"
                )
            ref = onto_head(repo, ref)
            remote = default_remote(repo, git(root, "rev-parse", str(ref)))
            moved = f" (moved onto {ref.baseline_sha[:7]}, the commit with the remote)"
        result = repo.experiments.push(git_remote, [str(ref)], push_cache=True)
        if not (result.get("success") or result.get("up_to_date")):
            raise SharingError(f"git remote {git_remote!r} took no ref of experiment {name!r}")
        commit = git(root, "rev-parse", str(ref))
        if missing := missing_in_remote(repo, commit, remote):
            raise SharingError(
                f"DVC remote {remote!r} lacks {len(missing)} of experiment {name!r}'s files "
                f"({', '.join(missing[:3])}): `dvc push -r {remote}` from the experiment's "
                "workspace, then run this again"
            )
    return (
        f"shared experiment {name}{moved}: its git ref to {git_remote!r}, its DVC-cached "
        f"files in remote {remote!r} ({result['uploaded']} uploaded now)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_remote", help="the git remote's name, e.g. origin")
    parser.add_argument("experiment", help="the experiment's name (`dvc exp list`)")
    args = parser.parse_args(argv)
    try:
        print(share(Path.cwd(), args.git_remote, args.experiment))
    except PipelineError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
