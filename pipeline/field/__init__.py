"""The field's newer faithfulness tests, run where the answer is known (docs/field.md).

One module per test, each following its paper's definition as pure functions over
tensors; a stage of its own runs each family (pipeline/stages/):

- `erasure`: erasure and decision flips (Serrano & Smith, ACL 2019).
- `agreement`: the disagreement problem's agreement metrics (Krishna et al., TMLR 2024).
- `erasure_study`: both on the lesson's runs and the study's seeds (the erasure stage).
- `abstraction`: interchange interventions on the context vector (Geiger et al.), with
  the random-network control of Sutter et al. (NeurIPS 2025) (the abstraction stage).
- `roar`: remove and retrain (Hooker et al., NeurIPS 2019), with the smoothing check
  of Song et al. (2023) (the roar stage).
"""
