"""Whether `pipeline server` may trust its folder, checked before anything starts.

The server keeps its admin password, Flask's secret key, PostgreSQL's cluster and
its password in DIR, and as root it chowns part of it to `postgres`. Another local
user who prepared that folder (a link DIR/postgres -> /victim, a planted
auth/password of their own) would have the server write and chown outside DIR,
or hand them the admin login. So, with one line naming the path:

- no path the server creates, writes or chowns in DIR is a symbolic link;
- DIR and every file and folder in it that the server reads or trusts belongs to
  the user running it (the cluster also to `postgres`, when root runs it there)
  and is writable by no one else;
- the folders above DIR belong to that user or root, and no one else may write
  to them unless they are sticky (as /tmp), where no one can rename another's
  entry; a link on the way belongs to that user or root.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from pipeline.core.errors import PipelineError

# What the server reads, writes or trusts in DIR: its own, and PostgreSQL's
# (which, as root, belong to the postgres user).
OWN = ("", "auth", *(f"auth/{name}" for name in ("password", "secret_key", "auth.ini",
       "auth.ini.tmp", "users.db")), "artifacts", "mlflow-server.log")  # fmt: skip
CLUSTER = ("postgres", "postgres/password", "postgres/postgres.log", "postgres/data",
           "postgres/data/PG_VERSION", "postgres/data/pg_hba.conf")  # fmt: skip
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
WAY_OUT = "use a folder of your own, e.g. in your home or the project"


def owner_of(path: Path) -> int:
    """The user owning `path` itself (a link is not followed)."""
    return os.lstat(path).st_uid


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check_server_folder(folder: Path, cluster_owners: frozenset[int] = frozenset()) -> None:
    """Refuse `folder` (as given, links not yet resolved) when another user could have
    planted or could change what the server trusts there; `cluster_owners`: who else
    may own the PostgreSQL part (the postgres user, as root)."""
    given = Path(os.path.abspath(folder))
    me = os.geteuid()
    _check_above(given, me)
    for part in OWN:
        _check_inside(given / part, {me})
    for part in CLUSTER:
        _check_inside(given / part, {me, *cluster_owners})


def _check_above(given: Path, me: int) -> None:
    for step in reversed(given.parents):  # a link on the way, as typed
        if step.is_symlink() and owner_of(step) not in (me, 0):
            raise PipelineError(
                f"the server's folder {given} is reached through the symbolic link {step}, "
                f"which {user_name(owner_of(step))} owns: {WAY_OUT}"
            )
    above = given.parent.resolve()
    for step in (above, *above.parents):
        if not step.exists():
            continue  # the server makes it
        mode = step.stat().st_mode
        if owner_of(step) not in (me, 0) or (mode & OTHERS_WRITE and not mode & stat.S_ISVTX):
            raise PipelineError(
                f"the server's folder {given} is inside {step}, which {user_name(owner_of(step))} "
                f"owns (mode {stat.S_IMODE(mode):o}): another user could replace what the "
                f"server keeps there; {WAY_OUT}"
            )


def _check_inside(path: Path, owners: set[int]) -> None:
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return  # the server makes it
    if stat.S_ISLNK(found.st_mode):
        raise PipelineError(
            f"{path} is a symbolic link: the server writes and chowns only real files "
            f"and folders in its folder; remove it, or {WAY_OUT}"
        )
    owner = owner_of(path)
    if owner not in owners:
        raise PipelineError(
            f"{path} belongs to {user_name(owner)}, not to {user_name(os.geteuid())}, who "
            f"runs the server: another user may have planted it (a password, a key); {WAY_OUT}"
        )
    if found.st_mode & OTHERS_WRITE:
        raise PipelineError(
            f"{path} is writable by others (mode {stat.S_IMODE(found.st_mode):o}): another "
            f"user could replace what the server trusts there; `chmod go-w {path}`"
        )
