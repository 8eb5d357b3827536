"""Remove and retrain (docs/field.md): Hooker et al.'s ROAR with Song et al.'s
smoothing check (`retrain`)."""

DOCUMENT = "metrics.json"
SHAPE = {
    "seeds": int,
    "removed_reading": (int, float),
    "removed_steps": dict,
    "majority_share": (int, float),
    "unmodified": dict,
    "rankings": dict,
    "at_chance_from": dict,
    "leaks": dict,
    "smoothing": dict,
    "headline": dict,
}
