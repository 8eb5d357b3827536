"""The explainer battery's settings (params.yaml's `faithfulness:` group): every
caller of the battery reads them (pipeline/analysis/explainers.py's defaults, the
faithfulness stage, erasure, roar, the grid's and the debate's cells), so they live
below the experiments; the faithfulness experiment declares them as its group
(pipeline/experiments/faithfulness/config.py). Imports nothing of the schema."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FaithfulnessConfig:
    """The explainer battery: every explainer scored for faithfulness (against the
    model's own behaviour) and plausibility (against the marked step), for the
    train.seeds runs and for every run of the seed study."""

    ig_steps: int = 50  # Gauss-Legendre nodes of integrated gradients (completeness error ~6e-9)
    order_seed: int = 0  # the random-order baseline draws from default_rng([order_seed, run seed])
    # The randomisation sanity checks (Adebayo et al. 2018) on the first study seeds:
    sanity_seeds: int = 100
    # re-drawn run k: stream((data.seed + offset + k) mod 2**32)
    randomisation_offset: int = 1_000_000
    label_seed: int = 0  # the training labels permuted by default_rng(label_seed)
    # captum's sensitivity_max and infidelity (normalize=True) on the train.seeds runs:
    robustness_seed: int = 0  # perturbations from default_rng([robustness_seed, run seed, metric])
    robustness_samples: int = 10  # perturbed inputs per sequence (captum's n_perturb_samples)
    # sensitivity's L-infinity ball (captum's default), infidelity's std
    robustness_radius: float = 0.02
