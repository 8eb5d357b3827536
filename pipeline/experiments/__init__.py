"""The experiments: one folder each, found by name through pipeline/core/kinds.py's
EXPERIMENTS (docs/architecture.md has a worked example).

The frameworks (the config, the memory bound, the report, headline.json, tracking,
provenance) import none of them: they look each one up by name and read what its
folder declares.

- `__init__.py`: `DOCUMENT`, the file the stage writes in its folder (`paths.<name>`)
  that the report and tracking read, and `SHAPE`, its top-level keys and JSON types
  (a document of another shape is refused in one line).
- `config.py` (imports no torch): `Settings`, the dataclass of the `<name>:` group of
  params.yaml with every default, declared once; `FOLDER`, the default of
  `paths.<name>`; `RANGES` and `RELATIVE`, each numeric key's range (a `Range`) or its
  range in words; `check_settings(cfg)`, the checks across keys.
- `memory.py`: `terms(cfg)`, the stage's dominant allocations (`MemoryTerm`s).
- `section.py` (imports no torch): `PLACE`, where its section stands among the
  experiments' in report.md; `section(document)`, its markdown;
  `headline(document)`, its entries of reports/headline.json.
- `tracked.py`: `parent_metrics(document)` and `run_metrics(document, seed)`, its
  numbers on the MLflow parent run and on each lesson run's child.
- `stage.py`: the DVC stage (`python -m pipeline.experiments.<name>.stage`).
- its computations, pure functions over tensors, one module per idea.
"""
