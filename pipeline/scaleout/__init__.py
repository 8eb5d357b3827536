"""Running the pipeline's jobs at scale: Hydra jobs and sweeps (sweep), one tracking
server on PostgreSQL for every worker (`python -m pipeline server`), and joining a
sharded seed study (`python -m pipeline merge_study`; the merge itself is
pipeline.analysis.seed_study's)."""
