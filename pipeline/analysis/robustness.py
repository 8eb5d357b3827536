"""The explainers' robustness, by captum's own metrics (Yeh et al., "On the
(In)fidelity and Sensitivity of Explanations", NeurIPS 2019; `captum.metrics`):

- `sensitivity_max`: the largest change (Frobenius norm) of an explanation over
  `robustness_samples` inputs drawn uniformly from the L-infinity ball of radius
  `robustness_radius` around each held-out sequence (lower is steadier);
- `infidelity`, with `normalize=True`: the mean squared error between what the
  explanation predicts a perturbation does, perturbation . attributions, and what
  it does, f(x) - f(x - perturbation), over Gaussian perturbations of standard
  deviation `robustness_radius`, after the best rescaling of the attributions.
  Without it the number grows with the attributions' scale, so explainers of
  different scales cannot be compared (captum#613) (lower is more faithful).

They apply to the explainers captum drives (Saliency, InputXGradient,
IntegratedGradients; the battery's `gradient`, `grad_x_input` and
`integrated_gradients`) and score captum's signed attributions per (step, channel),
which the battery reduces to one score per step. Each run is its own model: f is
its P(y=1) over the held-out sequences. Perturbations come from
numpy.random.default_rng([robustness_seed, run seed, metric]), not torch's global
stream, and are the same for every explainer of a run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

from pipeline.config import FaithfulnessConfig
from pipeline.models import interface
from pipeline.models.parameters import Params
from pipeline.models.pooling import probability

Forward = Callable[[torch.Tensor], torch.Tensor]


def saliency(forward: Forward, inputs: torch.Tensor, settings: FaithfulnessConfig) -> torch.Tensor:
    from captum.attr import Saliency

    return Saliency(forward).attribute(inputs, abs=False)


def input_x_gradient(
    forward: Forward, inputs: torch.Tensor, settings: FaithfulnessConfig
) -> torch.Tensor:
    from captum.attr import InputXGradient

    return InputXGradient(forward).attribute(inputs)


def integrated_gradients(
    forward: Forward, inputs: torch.Tensor, settings: FaithfulnessConfig
) -> torch.Tensor:
    from captum.attr import IntegratedGradients

    return IntegratedGradients(forward).attribute(
        inputs, baselines=0.0, n_steps=settings.ig_steps, method="gausslegendre"
    )


# The battery's rows that captum drives, by captum's attribution of each (N, T, C).
ATTRIBUTIONS: dict[str, Callable[[Forward, torch.Tensor, FaithfulnessConfig], torch.Tensor]] = {
    "gradient": saliency,
    "grad_x_input": input_x_gradient,
    "integrated_gradients": integrated_gradients,
}
METRICS = ("sensitivity_max", "infidelity")


def run_probability(params: Params, run: int) -> Forward:
    """Run `run`'s P(y=1) of a batch of sequences (B, T, C) -> (B,)."""
    one = params.map(lambda t: t[run : run + 1])

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        return probability(interface.forward(one, inputs)[0])[0]

    return forward


def uniform_ball(rng: np.random.Generator):
    """sensitivity_max's perturbation: uniform noise in the L-infinity ball."""

    def perturb(inputs: torch.Tensor, perturb_radius: float) -> torch.Tensor:
        noise = rng.uniform(-perturb_radius, perturb_radius, tuple(inputs.shape))
        return inputs + torch.from_numpy(noise).to(inputs)

    return perturb


def gaussian(rng: np.random.Generator, scale: float):
    """infidelity's perturbation I and the perturbed input x - I."""

    def perturb(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        noise = torch.from_numpy(rng.normal(0.0, scale, tuple(inputs.shape))).to(inputs)
        return noise, inputs - noise

    return perturb


def robustness(
    params: Params, seeds: list[int], inputs: torch.Tensor, settings: FaithfulnessConfig
) -> dict[str, dict[str, dict[str, float]]]:
    """{run seed: {explainer: {metric: mean over the held-out sequences}}}."""
    return {
        str(seed): run_robustness(params, run, seed, inputs, settings)
        for run, seed in enumerate(seeds)
    }


def run_robustness(
    params: Params, run: int, seed: int, inputs: torch.Tensor, settings: FaithfulnessConfig
) -> dict[str, dict[str, float]]:
    """{explainer: {metric: mean over the held-out sequences}} for one run."""
    from captum.metrics import infidelity, sensitivity_max

    forward = run_probability(params, run)
    samples, radius = settings.robustness_samples, settings.robustness_radius
    numbers = {}
    for name, attribute in ATTRIBUTIONS.items():

        def explanation(batch, attribute=attribute):  # a tensor, or captum's 1-tuple
            return attribute(forward, batch, settings)

        ball = uniform_ball(np.random.default_rng([settings.robustness_seed, seed, 0]))
        noise = gaussian(np.random.default_rng([settings.robustness_seed, seed, 1]), radius)
        with warnings.catch_warnings():
            # captum sets requires_grad on the inputs it is given, and says so each time.
            warnings.filterwarnings("ignore", "Input Tensor 0 did not already require")
            sensitivity = sensitivity_max(
                explanation,
                inputs,
                perturb_func=ball,
                perturb_radius=radius,
                n_perturb_samples=samples,
            )
            attributions = explanation(inputs).detach()
            unfaithful = infidelity(
                forward, noise, inputs, attributions, n_perturb_samples=samples, normalize=True
            )
        numbers[name] = {
            "sensitivity_max": float(sensitivity.mean()),
            "infidelity": float(unfaithful.mean()),
        }
    return numbers
