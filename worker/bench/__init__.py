"""`narrate bench` (the plain mlx-audio loop against narrate's engine: runner, workloads, report, and
the random-weight checkpoints it runs on: checkpoints) and the long-book stitch benchmark
(`python -m narrate.worker.bench.stitch`)."""
