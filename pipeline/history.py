"""How the run-to-run gap moved across versions: `python -m pipeline.history`.

A shim: the command lives in pipeline/tracking/history.py.
"""

from pipeline.tracking.history import main

if __name__ == "__main__":
    main()
