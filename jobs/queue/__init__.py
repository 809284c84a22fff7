"""The queue: queue names and priorities, every rq internal narrate relies on (rq_compat), the job's
life (requeue, abandoned, cancel, resume), books and their parts, claims, due times. Its Lua
scripts are package data in jobs/lua/ (jobs/scripts.py reads them)."""
