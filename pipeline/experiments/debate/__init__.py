"""The attention debate replayed where the answer is known (docs/debate.md): each
paper's experiment as its paper defines it, as small functions over the pooling's
weights and readouts (`adversary`, `permutation`, `seed_variance`, `fixed_attention`,
`consistent`, `deception`, on `pooling` and `training`), run on each task x model
variant cell by a DVC stage debate@<cell> (`cell`, `stage`); their figures and MLflow
runs (the debate_figures stage).

Its results are many files, one per cell: no DOCUMENT, `results.read`. Its numbers
are logged per cell by the debate_figures stage (`cell_runs`), not on the lesson's
runs: no tracked.py."""
