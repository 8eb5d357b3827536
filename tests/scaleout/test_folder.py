"""`pipeline server`'s folder, checked before anything starts (issue 49, item 3;
issue 51, item 1): no planted link, nothing another user owns or may write."""

from __future__ import annotations

import contextlib
import os
import pwd
from pathlib import Path

import pytest

from pipeline.core.errors import PipelineError
from pipeline.scaleout import server

NOBODY = 65534  # another local user


@pytest.fixture
def started(monkeypatch) -> list[str]:
    """What tracking_server started: PostgreSQL and mlflow server stand-ins that
    record their start (the login is still made, as the real server makes it)."""
    calls: list[str] = []

    @contextlib.contextmanager
    def fake_postgres(root: Path, port: int):
        calls.append(f"postgres in {root}")
        yield "postgresql://"

    @contextlib.contextmanager
    def fake_mlflow(root: Path, backend: str, host: str, port: int, owner):
        calls.append(f"mlflow server in {root}")
        yield "http://127.0.0.1:1"

    monkeypatch.setattr(server, "postgres", fake_postgres)
    monkeypatch.setattr(server, "mlflow_server", fake_mlflow)
    return calls


def refusal(store: Path) -> str:
    with pytest.raises(PipelineError) as err, server.tracking_server(store):
        pass
    assert "\n" not in str(err.value)
    return str(err.value)


def me() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


@pytest.mark.parametrize(
    "planted",
    ["", "postgres", "postgres/data", "postgres/password", "postgres/postgres.log", "auth",
     "auth/password", "auth/users.db", "artifacts", "mlflow-server.log"],
)  # fmt: skip
def test_a_planted_link_in_the_server_s_folder_is_refused_before_anything_starts(
    tmp_path, started, planted
):
    """Issue 49, item 3: another user plants DIR/store/postgres -> /victim; the server
    wrote the cluster, its password and its log there, and chowned it to postgres.
    Every path the server creates, writes or chowns must be no link."""
    store, victim = tmp_path / "srv/store", tmp_path / "victim"
    victim.mkdir()
    (store / planted).parent.mkdir(parents=True, exist_ok=True)
    (store / planted).symlink_to(victim)
    before = victim.stat()
    assert refusal(store) == (
        f"{store / planted} is a symbolic link: the server writes and chowns only real files "
        "and folders in its folder; remove it, or use a folder of your own, e.g. in your "
        "home or the project"
    )
    assert started == [] and list(victim.iterdir()) == []
    after = victim.stat()
    assert (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


@pytest.mark.parametrize("where", ["store", "srv"])
def test_a_server_folder_others_may_write_is_refused(tmp_path, started, where):
    """Issue 49, item 3: refuse a DIR that others may write (they could plant or
    replace what the server trusts), and a folder above it (they could swap DIR)."""
    store = tmp_path / "srv/store"
    store.mkdir(parents=True)
    (tmp_path / "srv/store" if where == "store" else tmp_path / "srv").chmod(0o777)
    message = refusal(store)
    if where == "store":
        assert message == (
            f"{store} is writable by others (mode 777): another user could replace what the "
            f"server trusts there; `chmod go-w {store}`"
        )
    else:
        assert message == (
            f"the server's folder {store} is inside {tmp_path / 'srv'}, which {me()} owns "
            "(mode 777): another user could replace what the server keeps there; use a "
            "folder of your own, e.g. in your home or the project"
        )
    assert started == [] and not (store / "auth").exists()


@pytest.fixture
def owned_by_another(monkeypatch):
    """owned_by_another(path): `path` now belongs to another user (nobody). As root,
    a real chown; otherwise the ownership lookup says so (the check stays real)."""
    from pipeline.scaleout import folder

    others: set[Path] = set()
    lookup = folder.owner_of
    monkeypatch.setattr(folder, "owner_of", lambda p: NOBODY if Path(p) in others else lookup(p))

    def give(path: Path) -> None:
        if os.geteuid() == 0:
            os.lchown(path, NOBODY, NOBODY)
        else:
            others.add(Path(path))

    return give


@pytest.mark.parametrize(
    "prepared",
    ["", "auth", "auth/password", "auth/secret_key", "postgres", "postgres/password",
     "postgres/data"],
)  # fmt: skip
def test_a_server_folder_prepared_by_another_user_is_refused_naming_the_owner(
    tmp_path, started, owned_by_another, prepared
):
    """Issue 51, item 1: another user made /tmp/srv/store and planted auth/password
    (theirs, 0600); the server adopted it and they logged in as admin. Everything the
    server reads or trusts must belong to the user running it."""
    store = tmp_path / "srv/store"
    for folder in ("auth", "postgres/data"):
        (store / folder).mkdir(parents=True, mode=0o700)
    for secret in ("auth/password", "auth/secret_key", "postgres/password"):
        (store / secret).write_text("PLANTED")
        (store / secret).chmod(0o600)
    owned_by_another(store / prepared)
    assert refusal(store) == (
        f"{store / prepared} belongs to nobody, not to {me()}, who runs the server: another "
        "user may have planted it (a password, a key); use a folder of your own, e.g. in "
        "your home or the project"
    )
    assert started == [] and (store / "auth/password").read_text() == "PLANTED"


def test_a_server_folder_of_one_s_own_starts_and_is_made_private_whatever_the_umask(
    tmp_path, started
):
    """What the checks let through: a new folder, made by the server with modes that
    its next start accepts (umask 002 would have left them group-writable)."""
    store = tmp_path / "srv/store"
    umask = os.umask(0o002)
    try:
        with server.tracking_server(store):
            pass
        with server.tracking_server(store):  # the second start trusts what the first made
            pass
    finally:
        os.umask(umask)
    assert started == [f"postgres in {store / 'postgres'}", f"mlflow server in {store}"] * 2
    assert {p.name: p.stat().st_mode & 0o777 for p in (store, store / "auth")} == {
        "store": 0o755,
        "auth": 0o700,
    }
    assert (store / "artifacts").stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in (store / "auth").iterdir()} == {
        "password": 0o600,
        "secret_key": 0o600,
        "auth.ini": 0o600,
    }
