"""The worker process: the supervisor, the process itself (host lock, recovery at start), the non-
forking rq worker, claiming jobs, what a process keeps between jobs, and `narrate run`'s in-process
worker."""
