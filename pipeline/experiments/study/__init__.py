"""The seed study (docs/lesson.md, "Seeds at scale"): runs 1..study.seeds, each from
stream(data.seed + k) like train.seeds, and the lesson's runs among them. The study
itself is pipeline/analysis/seed_study.py (the grid, roar and others train with its
machinery); the Hydra app is pipeline/study.py. Its results are more than one file
(summary.json, seeds.parquet): `results.read`."""
