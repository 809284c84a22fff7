"""A job queued before an upgrade still runs after it: the function name stored in a job's Redis
hash is a name the worker maps (narrate.worker.process.rq_worker.FUNCTIONS), not an import path,
so moving modules (the layout of one package per concern) changes nothing a queued job holds."""

from __future__ import annotations

import json

from helpers.fake import fake_env
from helpers.procs import narrate, wait_for_job
from narrate.jobs.server.records import fetch
from rq import Queue
from rq.serializers import JSONSerializer

STORED_BEFORE_THE_LAYOUT = "narrate.jobs.task.narrate_job"  # what jobs queued by earlier versions hold


def test_a_job_stored_under_the_old_function_name_runs(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "old.txt"
    doc.write_text("A job from before the upgrade. It still runs.")
    proc = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "old.wav"), "--json")
    assert proc.returncode == 0, proc.stderr
    job = fetch(external_redis, json.loads(proc.stdout)["id"])
    assert job.func_name == STORED_BEFORE_THE_LAYOUT
    # the same job written again, by hand, as an earlier version wrote it: the literal name, the JSON spec
    q = Queue("narrate", connection=external_redis, serializer=JSONSerializer)
    job.delete()
    again = q.enqueue_call(
        STORED_BEFORE_THE_LAYOUT,
        args=job.args,
        job_id=job.id,
        meta=job.meta,
        timeout=job.timeout,
        description=job.description,
    )
    assert again.func_name == STORED_BEFORE_THE_LAYOUT
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job.id)["status"] == "finished"
    assert (home / "out" / "old.wav").stat().st_size > 0
