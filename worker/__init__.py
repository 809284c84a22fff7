"""narrate.worker: the MLX side. The only package that imports mlx or mlx_audio."""
