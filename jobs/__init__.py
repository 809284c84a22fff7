"""narrate.jobs: documents, job specs, the queue API, the job function and audio stitching.

Nothing here imports mlx or mlx_audio: the CLI and any submitting host stay light.
"""

__version__ = "0.1.0"
