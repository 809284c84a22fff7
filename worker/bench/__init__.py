"""`narrate bench` (the plain mlx-audio loop against narrate's engine: runner, measure, workloads,
bench_report, and the random-weight checkpoints it runs on: checkpoints; its peers: mlx_continuous for
mlx-audio's continuous-batching session, torch_variants, torch_peer and torch_checkpoint for the
PyTorch qwen-tts package run by a separate Python). The developers' benchmarks (the long-book stitch, end to end,
fan-out, ...) are in tests/bench."""
