"""Where the project lives: every path the pipeline writes is resolved under it."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
