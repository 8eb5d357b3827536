"""Commands that read what was tracked and print it: `python -m pipeline COMMAND`.

- history: how the run-to-run gap moved across versions (and a sweep's jobs)
- compare: the model variants and tasks side by side
- diff: what a change did to every param and metric (DVC's diffs)
- ui: MLflow's UI on the gap view, behind a login
"""
