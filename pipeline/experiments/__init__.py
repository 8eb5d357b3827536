"""The experiments: one folder each, found by name through pipeline/core/kinds.py's
EXPERIMENTS (docs/architecture.md has a worked example).

The frameworks (the config, the memory bound, the report, headline.json, tracking,
provenance, dvc.yaml's code deps) import none of them: they look each one up by name
and read what its folder declares.

- `__init__.py`: what the report and tracking read of its outputs, the results:
  `DOCUMENT`, a JSON file in the folder `paths.<name>`, and `SHAPE`, its top-level
  keys and JSON types (a document of another shape is refused in one line); or,
  where the results are more than one file, no DOCUMENT and a `results.py` whose
  `read(cfg)` returns them (None where the stage has not run).
- `config.py` (imports no torch): `Settings`, the dataclass of the `<name>:` group of
  params.yaml with every default, declared once; `PATHS`, its outputs' keys under
  `paths.` with their defaults, and `FOLDERS`, those that are folders; `RANGES` and
  `RELATIVE`, each numeric key's range (a `Range`) or its range in words;
  `check_settings(cfg)`, the checks across keys.
- `memory.py`: `stage_terms(cfg)`, each of its stages' dominant allocations
  (`MemoryTerm`s) by the stage's name in dvc.yaml.
- `section.py` (imports no torch): `SECTIONS`, its sections of report.md as (place,
  function of the results -> markdown), placed among every experiment's by place:
  below 10 before the grid's and the debate's sections, from 10 after them, every
  section that is the lesson's own (title to model variant) first;
  `headline(results)`, its entries of reports/headline.json. Where its report reads
  more than its results or draws figures: `report_results(cfg, results)`, what its
  sections read instead (a per-seed table read beside the results), and
  `plots(cfg, results)`, its figures (`drawing.Plot`s whose section is the
  experiment's name, drawn into paths.figures; torch and matplotlib imported inside):
  its section functions then take (results, the figures' links). Where it has
  numbers of each lesson run: `run_headline(results, seed)`, merged into that run's
  entry of headline.json's "runs" after the run's own.
- `tracked.py`: `parent_metrics(results)` and `run_metrics(results, seed)`, its
  numbers on the MLflow parent run and on each lesson run's child; optionally
  `ARTIFACTS`, the `paths.` keys of its outputs logged as the parent run's
  artifacts. A state's digest holds every experiment's results by name, and a run
  logs an experiment's params only where its results are there.
- `stage.py`: the DVC stage (`python -m pipeline.experiments.<name>.stage`).
- its computations, pure functions over tensors, one module per idea.
"""
