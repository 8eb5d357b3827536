"""Erasure and disagreement (docs/field.md): Serrano & Smith's erasure and decision
flips (`decision_flips`), Krishna et al.'s agreement metrics (`agreement`), both on the
lesson's runs and the study's first erasure.seeds runs (`erasure_study`)."""

DOCUMENT = "metrics.json"
SHAPE = {"runs": dict, "study": dict}
