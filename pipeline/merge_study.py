"""Join a sharded study: `python -m pipeline.merge_study SWEEP_DIR --out FILE`.

A shim: the command lives in pipeline/tracking/merge_study.py.
"""

from pipeline.tracking.merge_study import main

if __name__ == "__main__":
    main()
