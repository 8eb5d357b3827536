"""A login for the MLflow servers we start (`pipeline ui`, `pipeline server`).

Both run MLflow's own basic-auth app (`--app-name basic-auth`, from `mlflow[auth]`):
every request but /health and the static files must give the owner's user and
password, so another local user can neither read the runs nor create, delete or
upload anything through the API. A browser asks once, with its own login dialog.

The login lives in a folder of its own, mode 0700, made on first start and kept:

    password     the admin's password (0600), generated
    secret_key   Flask's secret for the sign-up form's CSRF check (0600), generated
    auth.ini     MLflow's auth settings, rewritten on every start
    users.db     the auth app's users: the admin, and whoever the owner adds

Clients give the login as MLflow's client reads it, MLFLOW_TRACKING_USERNAME and
MLFLOW_TRACKING_PASSWORD (`Login.client_env`).
"""

from __future__ import annotations

import os
import pwd
import secrets
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.errors import PipelineError

ADMIN = "admin"
LOGIN_FILES = ("password", "secret_key", "auth.ini", "auth.ini.tmp", "users.db")
APP_NAME = "basic-auth"  # mlflow server --app-name: the entry point mlflow[auth] registers
AUTH_INI = """\
# Written by pipeline.tracking.auth on every start.
[mlflow]
# A user the owner adds sees nothing until granted it; the admin sees everything.
default_permission = NO_PERMISSIONS
database_uri = sqlite:///{users}
admin_username = {admin}
authorization_function = mlflow.server.auth:authenticate_request_basic_auth
"""


@dataclass(frozen=True)
class Login:
    """The owner's login to a server started here, and where it is kept."""

    folder: Path
    username: str
    password: str
    secret_key: str

    @property
    def password_file(self) -> Path:
        return self.folder / "password"

    def server_env(self) -> dict[str, str]:
        """What `mlflow server --app-name basic-auth` reads: its settings, the admin's
        password (used only to create the admin in a new users.db) and Flask's key.
        In the environment, not on a command line that any local user reads."""
        return {
            "MLFLOW_AUTH_CONFIG_PATH": str(self.folder / "auth.ini"),
            "MLFLOW_AUTH_ADMIN_USERNAME": self.username,
            "MLFLOW_AUTH_ADMIN_PASSWORD": self.password,
            "MLFLOW_FLASK_SERVER_SECRET_KEY": self.secret_key,
        }

    def client_env(self) -> dict[str, str]:
        """What MLflow's client sends as basic auth."""
        return {
            "MLFLOW_TRACKING_USERNAME": self.username,
            "MLFLOW_TRACKING_PASSWORD": self.password,
        }

    def how_to_log_in(self) -> str:
        return f"log in as {self.username}, password in {self.password_file}"


def write_secret(path: Path, secret: str) -> None:
    """A new file only its owner may read (root reads any file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secret)


def _secret(path: Path) -> str:
    if not path.exists():
        write_secret(path, secrets.token_urlsafe(32))
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)  # a copy made readable by others is made private again
    return path.read_text().strip()


def check_no_link(base: Path, folder: str) -> None:
    """Refuse a symbolic link anywhere on the login folder `folder` (relative to
    `base`) or on a file in it, as for the outputs' paths: the secrets would be
    written into the link's target, outside the project (a cloned repository can
    carry such a link)."""
    from pipeline.core.files import first_link

    for name in LOGIN_FILES:
        link = first_link(Path(folder) / name, base)
        if link is not None:
            raise PipelineError(
                f"the login folder {base / folder} must not pass through a symbolic link "
                f"({link} is one): the password and keys are kept only in a real folder; "
                "remove the link, and a new login is made"
            )


def owner_name(path: Path) -> str:
    """Who owns `path` (a user name, else the uid; '?' if it cannot be seen)."""
    try:
        uid = path.stat().st_uid
    except OSError:
        return "?"
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def login(folder: Path) -> Login:
    """The login kept in `folder`, made on first use; another user's, one line."""
    folder = Path(folder).resolve()
    try:
        return _login(folder)
    except PermissionError as err:  # another local user's folder: theirs, 0700
        where = Path(err.filename or folder)
        where = where if where.exists() else folder  # a file in a folder this user cannot read
        raise PipelineError(
            f"cannot open the login in {folder}: {err.strerror} ({where} belongs to "
            f"{owner_name(where)}): start it as that user, whose login it is; other users "
            "reach the runs through a tracking server (python -m pipeline server)"
        ) from None


def _login(folder: Path) -> Login:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    folder.chmod(0o700)
    users = folder / "users.db"
    if users.exists() and not (folder / "password").exists():
        raise PipelineError(
            f"{users} holds a login whose password file is gone: "
            f"remove {folder} to make a new login"
        )
    found = Login(folder, ADMIN, _secret(folder / "password"), _secret(folder / "secret_key"))
    if users.exists() and users.stat().st_mode & 0o077:
        users.chmod(0o600)  # the auth app made it with the umask's mode
    ini = folder / "auth.ini"
    partial = ini.with_name(ini.name + ".tmp")
    partial.unlink(missing_ok=True)  # one a killed start left
    write_secret(partial, AUTH_INI.format(users=users, admin=ADMIN))
    partial.replace(ini)
    return found
