"""The next lesson (docs/next_lesson.md): a seed distribution for each task x model
variant cell, each a DVC stage grid@<cell> (`cell`), their figures and MLflow runs
(the next_lesson stage), and the suppressors' shares of the cells whose task has one.

Its results are many files, one per cell: no DOCUMENT, `results.read`. Its numbers
are logged per cell by the next_lesson stage (`cell_runs`), not on the lesson's runs:
no tracked.py."""
