"""What runs on a worker: the job function, the part job, the stitcher, the context the worker hands a
job, progress and the per-batch log."""
