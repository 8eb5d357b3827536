"""The commands' output options (pipeline/core/files.py, `command_output`): never
the store nor the project's sources, config or outputs, an existing file only
when it is the command's own."""

from __future__ import annotations

import pytest

from pipeline.config import PROJECT_ROOT


def test_the_commands_output_options_write_only_their_own_files(tmp_path, monkeypatch):
    """Issue 34, case 7: `diff --out mlflow.db`, `compare --csv params.yaml` and
    `history --plot README.md` replaced the store, the params and the README, exit 0."""
    from pipeline.core.errors import ConfigError
    from pipeline.core.files import command_output

    def own(head: bytes) -> bool:
        return head.startswith(b"mine")

    for name in (
        "mlflow.db",
        "mlflow.db.lock",
        "params.yaml",
        "README.md",
        "dvc.lock",
        "reports/metrics.json",
        "conf/config.yaml",
        "pipeline/new.py",
        "data/x",
    ):
        with pytest.raises(ConfigError, match=r"^--out .*: not written there \(") as err:
            command_output(PROJECT_ROOT / name, "--out", own)
        assert "\n" not in str(err.value)
    (tmp_path / "theirs.md").write_text("a file of someone else's")
    with pytest.raises(ConfigError, match="a file this command did not write"):
        command_output(tmp_path / "theirs.md", "--out", own)
    with pytest.raises(ConfigError, match="a folder"):
        command_output(tmp_path, "--out", own)
    (tmp_path / "earlier.md").write_text("mine, from the last run")
    assert command_output(tmp_path / "earlier.md", "--out", own) == tmp_path / "earlier.md"
    assert command_output(tmp_path / "new.md", "--out", own) == tmp_path / "new.md"
    assert command_output(PROJECT_ROOT / "outputs/new.md", "--out", own)
