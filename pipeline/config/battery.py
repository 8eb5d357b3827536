"""The explainer battery's settings (params.yaml's `faithfulness:` group): every
caller of the battery reads them (pipeline/analysis/explainers.py's defaults, the
faithfulness stage, erasure, roar, the grid's and the debate's cells), so they live
below the experiments; the faithfulness experiment declares them as its group
(pipeline/experiments/faithfulness/config.py). Imports nothing of the schema."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FaithfulnessConfig:
    """The explainer battery (pipeline/analysis/faithfulness.py)."""

    ig_steps: int = 50  # Gauss-Legendre nodes of integrated gradients
    order_seed: int = 0  # the random-order baseline's noise, with each run's seed
    sanity_seeds: int = 100  # the first study seeds through the sanity checks
    randomisation_offset: int = 1_000_000  # re-drawn run k: stream(data.seed + offset + k)
    label_seed: int = 0  # the permutation of the training labels (label randomisation)
    robustness_seed: int = 0  # captum's sensitivity and infidelity perturbations
    robustness_samples: int = 10  # perturbed inputs per sequence
    robustness_radius: float = 0.02  # sensitivity's L-infinity ball, infidelity's noise std
