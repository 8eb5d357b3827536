"""Write params.yaml from conf/, and dvc.yaml's generated parts.

`python -m pipeline.params`: `dvc exp run -S` composes conf/ itself (hydra.enabled
in .dvc/config) but `dvc repro` does not, so after editing conf/ run this, then
`dvc repro`. The bytes are what DVC writes: Hydra's compose, resolved,
OmegaConf.to_yaml. dvc.yaml's experiment stages come from their folders, and each
stage's code deps follow its imports (pipeline/stages/dvc_yaml.py).

`python -m pipeline.params --defaults` first writes conf/ from the defaults in the
code: the schema's dataclasses, the model kinds' and tasks' modules, the experiments'
Settings (pipeline/config/conf_files.py). Run it after adding a plug-in or an
experiment or changing a default, not after editing conf/ (it would put the defaults
back).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.config import PARAMS_FILE, PROJECT_ROOT
from pipeline.config.conf_files import written
from pipeline.config.load import composed_yaml
from pipeline.config.provenance import PIPELINE_FILE
from pipeline.config.schema import CONF_DIR
from pipeline.core.files import write_text
from pipeline.stages import entry
from pipeline.stages.dvc_yaml import generated


def write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        write_text(path, text)
        print(f"wrote {path}")


def main(path: Path = PROJECT_ROOT / PARAMS_FILE, argv: list[str] | None = None) -> None:
    """`argv`: the command line's arguments (sys.argv's where None): `--defaults`, or
    `--help` (answered without writing)."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.params", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="first write conf/ from the defaults in the code (puts the defaults back)",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.defaults:
        for conf_file, text in written(CONF_DIR).items():
            write_if_changed(conf_file, text)
    write_text(path, composed_yaml())
    print(f"wrote {path}")
    pipeline_file = path.parent / PIPELINE_FILE
    if pipeline_file.is_file():  # not where params.yaml is written outside a project
        write_if_changed(
            pipeline_file,
            generated(pipeline_file.read_text(), path.parent),
        )


if __name__ == "__main__":
    entry(main)
