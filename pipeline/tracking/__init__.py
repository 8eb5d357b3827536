"""MLflow tracking: one parent run per pipeline state, one child run per seed.

Only the modules of this package import mlflow, and only inside functions:

- store: the store's URI, SQLite file, artifacts folder and lock; creating it
  whole; checking a server; its errors as one line
- state: a pipeline state, its digest, and the tags and params it records
- record: the store's record of the state logged last (the no-op check)
- view: the MLflow UI's saved gap view
- client: what every logger does through MLflow's client
- runs: logging a pipeline state (parent and child runs)
- registered: each seed's model, logged on its run and registered with the alias
  run-<seed> (the track stage passes it to `log_state`)
- pyfunc: the model itself, an MLflow pyfunc logged from code
- search: reading the logged states back
- cell_runs: logging an experiment's cells (the grid's, the debate's), one parent run each
- auth: the login of the MLflow servers we start (MLflow's basic-auth app)
- serving: free ports and waiting for a server

The commands that read the store and print live in pipeline/browse/, the
scale-out machinery (sweeps, the tracking server) in pipeline/scaleout/.

The names below are the ones the stages and the Hydra apps use.
"""

from pipeline.tracking.record import logged_run
from pipeline.tracking.runs import log_state
from pipeline.tracking.search import search_parent_runs
from pipeline.tracking.state import (
    STATE_TAG,
    PipelineState,
    battery_documents,
    environment_tags,
    git_tags,
    lock_hashes,
    state_digest,
)
from pipeline.tracking.store import (
    check_server,
    ensure_store,
    experiment_id,
    store_root,
    store_uri,
)
from pipeline.tracking.view import GAP_VIEW

__all__ = [
    "GAP_VIEW",
    "STATE_TAG",
    "PipelineState",
    "battery_documents",
    "check_server",
    "ensure_store",
    "environment_tags",
    "experiment_id",
    "git_tags",
    "lock_hashes",
    "log_state",
    "logged_run",
    "search_parent_runs",
    "state_digest",
    "store_root",
    "store_uri",
]
