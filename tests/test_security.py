"""A forged job in Redis can neither unpickle nor run anything but narrate's job function."""

from __future__ import annotations

import json

from conftest import narrate
from faults import submit
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
        assert job.get_status(refresh=True).value == "failed"
    assert (
        "not a narrate job function"
        in Job.fetch(forged.id, connection=external_redis, serializer=JSONSerializer).latest_result().exc_string
    )


def test_job_payloads_are_json_with_relative_paths(env, home, voice_wav, external_redis):
    """Every job hash holds JSON (no pickle), and its arguments hold ids and a relative path."""
    import zlib

    doc = home / "s4.txt"
    doc.write_text("Only ids travel.")
    submit(env, doc, voice_wav, home / "out" / "s4.wav")
    keys = [k for k in external_redis.keys("rq:job:*") if external_redis.type(k) == b"hash"]
    assert keys
    for key in keys:
        data = external_redis.hget(key, "data")
        payload = json.loads(zlib.decompress(data))
        assert not data.startswith(b"\x80")
        assert str(home) not in json.dumps(payload) and "/tmp" not in json.dumps(payload)
