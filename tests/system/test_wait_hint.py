"""`submit --wait` with no worker taking jobs from the queue says so (it would wait silently for
ever), then follows the job once a worker starts."""

from __future__ import annotations

import subprocess
import threading

from helpers.fake import fake_env
from helpers.procs import NARRATE, start_worker, stop_worker, wait_until


def test_wait_says_when_no_worker_takes_jobs_from_the_queue(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    doc = home / "doc.txt"
    doc.write_text("One sentence. Two sentences.")
    args = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "d.wav"), "--wait"]
    proc = subprocess.Popen([*NARRATE, *args], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = None
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(proc.stderr), daemon=True)  # lines as they come
    reader.start()
    try:
        wait_until(lambda: any("no worker" in line for line in seen), 30, "the hint", poll=0.1)
        hint = next(line for line in seen if "no worker" in line)
        assert "no worker is taking jobs from queue 'narrate'" in hint and "narrate worker" in hint, seen
        worker = start_worker(e)
        assert proc.wait(timeout=60) == 0, seen
        reader.join(10)
        assert proc.stdout.read().splitlines()[-1] == str(home / "out" / "d.wav")
        assert sum("no worker" in line for line in seen) == 1, seen  # said once
    finally:
        proc.kill()
        if worker is not None:
            stop_worker(worker)


def test_no_hint_while_a_worker_listens(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    worker = start_worker(e)
    try:
        doc = home / "doc.txt"
        doc.write_text("One sentence.")
        from rq import Queue, Worker

        q = Queue("narrate", connection=external_redis)
        wait_until(lambda: Worker.all(queue=q), 60, "the worker listening")  # started, registered on the queue
        args = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "d.wav"), "--wait"]
        proc = subprocess.run([*NARRATE, *args], env=e, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "no worker" not in proc.stderr, proc.stderr
    finally:
        stop_worker(worker)
