"""Causal abstraction (docs/field.md): interchange interventions on the context vector
(Geiger et al.), linear and RevNet alignment maps, with Sutter et al.'s random-network
control (`interchange`)."""

DOCUMENT = "abstraction.json"
SHAPE = {"seeds": list, "implements": (int, float), "conditions": dict}
