"""Schedules under faults and hostile input: a scheduler SIGKILLed (or stopped) mid-tick, a thousand
documents with an unreadable and a binary one, links out of the folder, documents replaced while
a tick reads them, two schedules fighting over one output folder."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import zlib

import pytest
from helpers.audio import write_voice
from helpers.books import book, write_docs
from helpers.procs import narrate, stop_worker, wait_until
from helpers.sched import (
    add,
    docs,
    listing,
    make_due,
    queued,
    run_tick,
    sched_env,
    skipped,
    start_scheduler,
    state,
    wait_runs,
)
from narrate.jobs.server.records import fetch


def stored_texts(r) -> list[str]:
    """Every document narrate stored for a job, as JSON text."""
    return [zlib.decompress(r.get(k)).decode() for k in r.keys("narrate:doc:*")]


def job_document(r, job_id: str) -> dict:
    spec = fetch(r, job_id).args[0]
    return json.loads(zlib.decompress(r.get(f"narrate:doc:{spec['document']}")))


def test_sigkill_mid_tick_loses_nothing_and_submits_nothing_twice(env, home, voice_wav, external_redis):
    """Schedulers SIGKILLed at random points of one tick (right after claiming it, and after random
    numbers of documents): the next one finishes the tick; every document has exactly one job."""
    n = 400
    e = sched_env(env, home)
    write_docs(home / "w", n)
    add(e, "nightly", home / "w", voice_wav)
    make_due(external_redis, "nightly")
    rng = random.Random(int(os.environ.get("NARRATE_TEST_SEED", "8")))
    points = sorted(rng.sample(range(1, n - 50), 3))
    lease = "narrate:schedule:nightly:tick"

    def reached(k: int) -> bool:
        return bool(external_redis.exists(lease)) and external_redis.hlen("narrate:schedule:nightly:docs") >= k

    for k in [0, *points]:
        proc = start_scheduler(e)
        try:
            wait_until(lambda k=k: reached(k), 60, f"{k} documents recorded", poll=0.002)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            stop_worker(proc)
        assert state(external_redis, "nightly")["runs"] == 0, "the tick ended before the kill"
    final = start_scheduler(e)
    try:
        st = wait_runs(external_redis, "nightly", 1)
    finally:
        stop_worker(final)
    recorded = docs(external_redis, "nightly")
    jobs = queued(external_redis)
    assert len(recorded) == n and len(jobs) == n == len(set(jobs))
    assert sorted(d["job"] for d in recorded.values()) == sorted(jobs)
    assert len(st["last_run"]["submitted"]) < n  # the last scheduler did not start over
    for name in ("doc0000.txt", f"doc{n - 1:04d}.txt"):
        doc = job_document(external_redis, recorded[name]["job"])
        assert doc["title"] == name[:-4]
    assert not external_redis.exists(lease)


def test_a_stopped_scheduler_leaves_the_tick_at_once(env, home, voice_wav, external_redis):
    """SIGTERM mid-tick: it stops after the document in hand, gives the lease back (no waiting for it
    to expire) and exits 0; the next scheduler finishes the tick."""
    e = sched_env(env, home)
    write_docs(home / "w", 300)
    add(e, "nightly", home / "w", voice_wav)
    make_due(external_redis, "nightly")
    proc = start_scheduler(e)
    wait_until(lambda: external_redis.hlen("narrate:schedule:nightly:docs") >= 20, 60, "20 documents", poll=0.005)
    log = stop_worker(proc, signal.SIGTERM, timeout=10)
    assert proc.returncode == 0, log
    assert not external_redis.exists("narrate:schedule:nightly:tick")
    assert state(external_redis, "nightly")["runs"] == 0
    proc = start_scheduler(e)
    try:
        wait_runs(external_redis, "nightly", 1, timeout=30)
    finally:
        stop_worker(proc)
    assert len(queued(external_redis)) == 300


def test_a_thousand_documents_an_unreadable_and_a_binary_one(env, home, voice_wav, external_redis):
    """The good ones are submitted; the bad ones are reported once (in `schedule list`) and not read
    again at every tick, only once they change."""
    e = sched_env(env, home)
    watch = home / "w"
    write_docs(watch, 1000, sentences=1)
    unreadable = watch / "locked.txt"
    unreadable.write_text("Nobody may read this.")
    unreadable.chmod(0)
    binary = watch / "blob.txt"
    binary.write_bytes(b"\x00\x01binary\x00" * 50)
    add(e, "inbox", watch, voice_wav)
    make_due(external_redis, "inbox")
    proc = start_scheduler(e)
    try:
        st = wait_runs(external_redis, "inbox", 1, timeout=120)
    finally:
        stop_worker(proc)
    assert len(st["last_run"]["submitted"]) == 1000 == len(queued(external_redis))
    reasons = {k: v["reason"] for k, v in skipped(external_redis, "inbox").items()}
    assert reasons == {"locked.txt": "it is not readable (permission denied)", "blob.txt": reasons["blob.txt"]}
    assert "binary" in reasons["blob.txt"]
    assert sorted(d["document"] for d in st["last_run"]["skipped_new"]) == ["blob.txt", "locked.txt"]
    text = narrate(e, "schedule", "list").stdout
    assert text.count("skipped: locked.txt: it is not readable") == 1 and text.count("skipped: blob.txt") == 1
    assert "and 980 more submitted" in text
    again = run_tick(e, "inbox")
    assert again["submitted"] == [] and again["skipped_new"] == [] and again["unchanged"] == 1000
    # Not read again: the same size and time with good text in it goes unnoticed ...
    st_blob = binary.stat()
    good = book(40, "blob")[: st_blob.st_size].ljust(st_blob.st_size, ".")
    with open(binary, "r+b") as f:
        f.write(good.encode())
    os.utime(binary, ns=(st_blob.st_atime_ns, st_blob.st_mtime_ns))
    assert run_tick(e, "inbox")["submitted"] == []
    # ... until it changes (its time, or the unreadable one's mode)
    os.utime(binary, (time.time() - 60, time.time() - 60))
    unreadable.chmod(0o644)
    later = run_tick(e, "inbox")
    assert sorted(d["document"] for d in later["submitted"]) == ["blob.txt", "locked.txt"]
    assert skipped(external_redis, "inbox") == {}


def test_links_out_of_the_folder_are_never_read(env, home, voice_wav, external_redis):
    """A symbolic link (to a file or a folder), a hard link to a file outside and a FIFO are skipped
    with the reason, and nothing of the outside file reaches the server; a watched folder replaced by
    a link is refused."""
    e = sched_env(env, home)
    secret = home / "secret.txt"
    secret.write_text("The SECRET-MARKER password is hunter2.")
    watch = home / "w"
    write_docs(watch, 1)
    (watch / "link.txt").symlink_to(secret)
    (watch / "folder.md").symlink_to(home)
    os.link(secret, watch / "hard.txt")
    os.mkfifo(watch / "pipe.txt")
    add(e, "shared", watch, voice_wav)
    report = run_tick(e, "shared")
    assert [d["document"] for d in report["submitted"]] == ["doc0000.txt"]
    reasons = {d["document"]: d["reason"] for d in report["skipped_new"]}
    assert set(reasons) == {"link.txt", "folder.md", "hard.txt", "pipe.txt"}
    assert "symbolic link" in reasons["link.txt"] and "symbolic link" in reasons["folder.md"]
    assert "2 hard links" in reasons["hard.txt"] and "named pipe" in reasons["pipe.txt"]
    assert not any("SECRET-MARKER" in text for text in stored_texts(external_redis))
    moved = home / "w-real"
    watch.rename(moved)
    watch.symlink_to(moved)
    proc = narrate(e, "schedule", "run", "shared")
    assert proc.returncode == 1 and "has been replaced by a symbolic link" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# Replaces a document with its other version the moment anything opens it (inotify: Linux only), so
# a tick that read a document twice (once to hash it, once to submit it) would get both versions.
SWAPPER = """
import ctypes, os, struct, sys
folder, names = sys.argv[1], sys.argv[2:]
texts = {n: [open(os.path.join(folder, f".{n}.v{k}"), "rb").read() for k in (0, 1)] for n in names}
turn = dict.fromkeys(names, 0)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
assert fd >= 0 and libc.inotify_add_watch(fd, folder.encode(), 0x20) >= 0  # IN_OPEN
print("ready", flush=True)
while True:
    buf, i = os.read(fd, 1 << 16), 0
    while i < len(buf):
        _wd, _mask, _cookie, size = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16 : i + 16 + size].rstrip(b"\\0").decode()
        i += 16 + size
        if name in texts:
            turn[name] ^= 1
            tmp = os.path.join(folder, f".{name}.new")
            with open(tmp, "wb") as f:
                f.write(texts[name][turn[name]])
            os.replace(tmp, os.path.join(folder, name))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the swapper uses inotify")
def test_a_document_replaced_while_a_tick_reads_it(env, home, voice_wav, external_redis):
    """Documents replaced by their other version whenever they are opened: what a tick records (the
    content hash) is always what it submitted (the stored document of the job)."""
    e = sched_env(env, home)
    watch = home / "w"
    watch.mkdir()
    names = [f"doc{i:02d}.txt" for i in range(10)]
    versions = {
        n: [f"The first version of {n}.\n\n{book(3)}", f"The second version of {n}.\n\n{book(4)}"] for n in names
    }
    for n in names:
        for k, text in enumerate(versions[n]):
            (watch / f".{n}.v{k}").write_text(text)
        (watch / n).write_text(versions[n][0])
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(watch), *names], stdout=subprocess.PIPE, text=True)
    assert swapper.stdout.readline() == "ready\n"
    checked = 0
    try:
        for round_ in range(4):
            name = f"r{round_}"
            add(e, name, watch, voice_wav, "-o", str(home / "out" / name))
            run_tick(e, name)
            for doc_name, rec in docs(external_redis, name).items():
                v = [x for x in versions[doc_name] if hashlib.sha256(x.encode()).hexdigest() == rec["sha256"]]
                assert len(v) == 1
                sentences = [s for p in job_document(external_redis, rec["job"])["paragraphs"] for s in p]
                assert " ".join(sentences).split() == v[0].split(), (
                    f"{doc_name}: hashed one version, narrated the other"
                )
                checked += 1
    finally:
        swapper.kill()
        swapper.wait()
    assert checked >= 30


def test_two_schedules_on_one_folder_and_output_folder(env, home, voice_wav, external_redis):
    """The second schedule's documents are refused by the output ownership rules (the first one's
    jobs hold those outputs): reported once, not retried, and never written over the first's."""
    e = sched_env(env, home)
    write_docs(home / "w", 3)
    other_voice = write_voice(home / "other.wav", amplitude=0.2)
    add(e, "first", home / "w", voice_wav, "-o", str(home / "out" / "shared"))
    add(e, "second", home / "w", other_voice, "-o", str(home / "out" / "shared"))
    first = run_tick(e, "first")
    assert len(first["submitted"]) == 3
    second = run_tick(e, "second")
    assert second["submitted"] == [] and len(second["skipped_new"]) == 3
    assert all("already the target of pending job" in d["reason"] for d in second["skipped_new"])
    assert run_tick(e, "second")["skipped_new"] == []
    view = {v["name"]: v for v in listing(e)["schedules"]}["second"]
    assert len(view["skipped"]) == 3
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    later = run_tick(e, "second")
    assert later["submitted"] == [] and later["skipped_new"] == []
    assert len(queued(external_redis)) == 0
    owners = {
        json.loads(json.dumps(external_redis.hget(f"narrate:output:shared/doc000{i}.mp3", "job").decode()))
        for i in range(3)
    }
    assert owners == {d["job"] for d in first["submitted"]}
    assert narrate(e, "schedule", "list", as_user=True).returncode == 0
