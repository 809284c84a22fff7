"""A forged job in Redis can neither unpickle nor run anything but narrate's job function."""

from __future__ import annotations

from helpers.procs import narrate
from rq import Callback, Queue
from rq.job import Job
from rq.serializers import JSONSerializer


def test_forged_jobs_run_nothing(env, home, external_redis):
    marker = home / "pwned"
    q = Queue("narrate", connection=external_redis, serializer=JSONSerializer)
    forged = q.enqueue("os.system", f"touch {marker}")  # JSON, but a function narrate never runs
    forged_cb = q.enqueue("narrate.jobs.task.narrate_job", {}, on_failure=Callback("os.system"))  # bad callback
    # A pickled payload: a JSON worker must not unpickle it.
    pickled = Queue("narrate", connection=external_redis).enqueue("os.system", f"touch {marker}")
    proc = narrate(env, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    for job in (forged, forged_cb, pickled):
        job = Job.fetch(job.id, connection=external_redis, serializer=JSONSerializer) if job is not pickled else job
        assert job.get_status(refresh=True).value == "failed", job.id
    assert (
        "not a narrate job function"
        in Job.fetch(forged.id, connection=external_redis, serializer=JSONSerializer).latest_result().exc_string
    )
