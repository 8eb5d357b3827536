"""Write params.yaml from conf/: `python -m pipeline.params`.

`dvc exp run -S` composes conf/ itself (hydra.enabled in .dvc/config) but
`dvc repro` does not, so after editing conf/ run this, then `dvc repro`.
The bytes are what DVC writes: Hydra's compose, resolved, OmegaConf.to_yaml.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.config import PARAMS_FILE, PROJECT_ROOT
from pipeline.config.load import composed_yaml
from pipeline.files import write_text
from pipeline.stages import entry


def main(path: Path = PROJECT_ROOT / PARAMS_FILE, argv: list[str] | None = None) -> None:
    """`argv`: the command line's arguments, only `--help` (answered without writing)."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.params", description=__doc__.splitlines()[0]
    )
    parser.parse_args(argv or [])
    write_text(path, composed_yaml())
    print(f"wrote {path}")


if __name__ == "__main__":
    entry(lambda: main(argv=sys.argv[1:]))
