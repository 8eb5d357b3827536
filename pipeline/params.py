"""Write params.yaml from conf/, and dvc.yaml's code deps from the imports:
`python -m pipeline.params`.

`dvc exp run -S` composes conf/ itself (hydra.enabled in .dvc/config) but
`dvc repro` does not, so after editing conf/ run this, then `dvc repro`.
The bytes are what DVC writes: Hydra's compose, resolved, OmegaConf.to_yaml.
Each stage's code deps in dvc.yaml follow its imports (pipeline/stages/code_deps.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.config import PARAMS_FILE, PROJECT_ROOT
from pipeline.config.load import composed_yaml
from pipeline.config.provenance import PIPELINE_FILE, stages
from pipeline.core.files import write_text
from pipeline.stages import entry
from pipeline.stages.code_deps import with_code_deps


def main(path: Path = PROJECT_ROOT / PARAMS_FILE, argv: list[str] | None = None) -> None:
    """`argv`: the command line's arguments, only `--help` (answered without writing)."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.params", description=__doc__.splitlines()[0]
    )
    parser.parse_args(argv or [])
    write_text(path, composed_yaml())
    print(f"wrote {path}")
    pipeline_file = path.parent / PIPELINE_FILE
    if not pipeline_file.is_file():  # params.yaml written outside a project
        return
    text = pipeline_file.read_text()
    generated = with_code_deps(text, stages(path.parent), path.parent)
    if generated != text:
        write_text(pipeline_file, generated)
        print(f"wrote {pipeline_file}'s code deps")


if __name__ == "__main__":
    entry(lambda: main(argv=sys.argv[1:]))
