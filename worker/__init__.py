"""narrate.worker: the MLX side. The only package that imports mlx or mlx_audio."""

from narrate.worker.blas import use_system_openblas

use_system_openblas()  # before anything imports mlx (blas.py says why)
