"""The model variants side by side: `python -m pipeline.compare`.

A shim: the command lives in pipeline/tracking/compare.py.
"""

from pipeline.tracking.compare import main

if __name__ == "__main__":
    main()
