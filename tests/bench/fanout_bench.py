"""Speed-up of fan-out: one book, wall time from submit to the finished output, on one worker host
without fan-out (the naive way), on one host with `--fan-out chapters`, and on 3 hosts (3 worker
processes, each with its own NARRATE_HOME, lock and output dir) sharing one Redis. Prints the ratios
and writes JSON.

    .venv/bin/python tests/bench/fanout_bench.py [--chapters 6] [--per-chapter 20] [--delay-ms 50]
        [--engine fake|mlx --model DIR] [--json FILE]

With the fake engine a sentence costs --delay-ms of sleep, so 3 hosts can overlap them; the real
engine on a 2-core machine competes for the same cores (see the figures' `cpus`)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # for helpers/, as tests/conftest.py has it for the tests

from helpers.audio import write_voice  # noqa: E402
from helpers.books import book  # noqa: E402
from helpers.procs import NARRATE, narrate  # noqa: E402


def chaptered(chapters: int, per: int) -> str:
    body = book(chapters * per).split("\n\n")
    k = per // 5
    return "\n\n".join(f"Chapter {c + 1}\n\n" + "\n\n".join(body[c * k : (c + 1) * k]) for c in range(chapters))


def host(base: dict, url: str) -> tuple[dict, Path]:
    h = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp"))
    (h / "out").mkdir()
    return dict(
        base,
        NARRATE_HOME=str(h),
        NARRATE_LOCK_PATH=str(h / "lock"),
        NARRATE_OUTPUT_DIR=str(h / "out"),
        NARRATE_REDIS_URL=url,
        NARRATE_CACHE_MAX_GB="0",
    ), h


def run(base: dict, url: str, doc: Path, voice: Path, hosts: int, fan_out: str, name: str) -> float:
    import redis

    r = redis.Redis.from_url(url)
    envs = [host(base, url) for _ in range(hosts)]
    workers = [
        subprocess.Popen([*NARRATE, "worker", "--quiet"], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for e, _ in envs
    ]
    try:
        deadline = time.monotonic() + 120
        while len(r.smembers("rq:workers")) < hosts:
            assert time.monotonic() < deadline, "workers did not start"
            time.sleep(0.1)
        time.sleep(1.0)  # registered; let them settle (imports done)
        t0 = time.monotonic()
        sub = narrate(
            envs[0][0], "submit", str(doc), "--voice", str(voice), "-o", f"{name}.wav", "--fan-out", fan_out, "--json"
        )
        assert sub.returncode == 0, sub.stderr
        job_id = json.loads(sub.stdout)["id"]
        from narrate.jobs.api.submit import status

        while True:  # in this process: a CLI per poll would take the CPU the workers need
            st = status(r, job_id)
            if st["status"] in ("finished", "failed", "canceled"):
                break
            time.sleep(0.05)
        assert st["status"] == "finished", st
        return time.monotonic() - t0
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.wait(timeout=60)
        for _, h in envs:
            shutil.rmtree(h, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chapters", type=int, default=6)
    ap.add_argument("--per-chapter", type=int, default=20)
    ap.add_argument("--delay-ms", type=int, default=50)
    ap.add_argument("--engine", default="fake", choices=["fake", "mlx"])
    ap.add_argument("--model", default=None)
    ap.add_argument("--redis-url", default=os.environ.get("NARRATE_REDIS_URL", "redis://127.0.0.1:6379/4"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fbw-", dir="/tmp"))
    doc = work / "book.txt"
    doc.write_text(chaptered(a.chapters, a.per_chapter))
    voice = write_voice(work / "voice.wav")
    base = dict(
        os.environ,
        NARRATE_ENGINE=a.engine,
        NARRATE_FAKE_DELAY_MS=str(a.delay_ms),
        NARRATE_BATCH_SIZE="4",
        NARRATE_MAX_FRAMES="6",
        PYTHONUNBUFFERED="1",
    )
    if a.model:
        base["NARRATE_MODEL"] = a.model
    import redis

    redis.Redis.from_url(a.redis_url).flushdb()
    t_none = run(base, a.redis_url, doc, voice, 1, "none", "none1")
    t_one = run(base, a.redis_url, doc, voice, 1, "chapters", "fan1")
    t_three = run(base, a.redis_url, doc, voice, 3, "chapters", "fan3")
    shutil.rmtree(work, ignore_errors=True)
    fig = {
        "engine": a.engine,
        "sentences": a.chapters * (a.per_chapter + 1),
        "chapters": a.chapters,
        "delay_ms": a.delay_ms if a.engine == "fake" else None,
        "cpus": os.cpu_count(),
        "one_host_no_fan_out_s": round(t_none, 2),
        "one_host_fan_out_s": round(t_one, 2),
        "three_hosts_fan_out_s": round(t_three, 2),
        "speedup_3_hosts_vs_1_no_fan_out": round(t_none / t_three, 2),
        "speedup_3_hosts_vs_1_fan_out": round(t_one / t_three, 2),
        "fan_out_overhead_1_host": round(t_one / t_none, 2),
    }
    print(
        f"3 hosts vs 1 (no fan-out): {fig['speedup_3_hosts_vs_1_no_fan_out']}x; "
        f"vs 1 host fanned out: {fig['speedup_3_hosts_vs_1_fan_out']}x; "
        f"fan-out overhead on 1 host: {fig['fan_out_overhead_1_host']}x"
    )
    print(json.dumps(fig))
    if a.json:
        Path(a.json).write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
