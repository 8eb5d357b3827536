"""What the browse commands' tests share: the check that a command's output file
(compare's --csv, history's --plot) replaces only a file it wrote itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def assert_replaces_only_its_own(
    main: Callable[[list[str]], object],
    store: str,
    option: str,
    own: str,
    foreign: tuple[str, str],
) -> None:
    """`main` (a browse command, on the store's experiment "test") writes its file
    `own` beside the store and replaces it on a second run; given a file it did not
    write (`foreign`: its name and text, a project's file), it refuses in one line and
    leaves the file as it was."""
    folder = Path(store.removeprefix("sqlite:///")).parent
    command = ["--uri", store, "--experiment", "test", option]
    main([*command, str(folder / own)])
    main([*command, str(folder / own)])  # its own
    path, text = folder / foreign[0], foreign[1]
    path.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main([*command, str(path)])
    assert "a file this command did not write" in str(exit_.value.code)
    assert path.read_text() == text
