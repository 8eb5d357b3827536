"""One MLflow tracking server for every worker of a sweep, on PostgreSQL.

A shim: the command lives in pipeline/tracking/server.py.
"""

from pipeline.tracking.server import main

if __name__ == "__main__":
    main()
