"""The analysis: metrics, the seed study, statistics, explainers, faithfulness, golden numbers."""
