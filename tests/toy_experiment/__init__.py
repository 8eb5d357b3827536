"""A toy experiment, registered by tests/experiments/test_experiments.py alone: the mean of each
lesson run's largest pooling weight over the held-out sequences. One folder and one
registry line (`kinds.register_experiment`) put it in every framework."""

DOCUMENT = "top_weight.json"
SHAPE = {"runs": dict}
