"""Open MLflow's UI on the answer: `python -m pipeline.ui [--open]`.

A shim: the command lives in pipeline/tracking/ui.py.
"""

from pipeline.tracking.ui import main

if __name__ == "__main__":
    main()
