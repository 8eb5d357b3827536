"""The explainer battery (docs/faithfulness.md): every explainer and metric on the
lesson's runs and the study's, the paired comparisons with attention, the
randomisation sanity checks and captum's robustness. The battery itself is
pipeline/analysis/ (faithfulness.py, explainers.py, sanity.py, robustness.py), which
erasure, roar and the grid's and the debate's cells run too. Its results are more
than one file (faithfulness.json, study/faithfulness.json): `results.read`."""
