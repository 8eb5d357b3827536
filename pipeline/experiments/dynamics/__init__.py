"""The mechanism over training (docs/dynamics.md): when each study seed finds the
marked step, in what order the phases come, what its first epochs predict
(`emergence`), how many seeds each of the report's claims needs (`seeds_needed`),
and whether the run-to-run gap is test-set noise (`noise`), with a phase diagram over
the learning rate and the init scale (`phases`)."""

DOCUMENT = "dynamics.json"
SHAPE = {
    "seeds": int,
    "found": float,
    "emergence": dict,
    "predictors": dict,
    "claims": dict,
    "noise": dict,
    "flip": dict,
    "phases": dict,
    "curves": dict,
}
