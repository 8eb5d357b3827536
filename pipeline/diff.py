"""What a change did to every param and metric: `python -m pipeline.diff [REV]`.

A shim: the command lives in pipeline/tracking/diff.py.
"""

from pipeline.tracking.diff import main

if __name__ == "__main__":
    main()
