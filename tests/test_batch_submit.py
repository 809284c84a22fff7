"""`narrate submit a.txt b.md c.txt`: one job each, every file checked before any is enqueued,
outputs named after their documents in the -o directory, JSON lines."""

from __future__ import annotations

import json
import threading

from conftest import narrate, start_worker, stop_worker, wait_for_job
from faults import fake_env, synthesized
from opskit import narrate_keys, one_error_line, submit_json, write_docs


def test_a_batch_is_one_job_per_document_named_after_it(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    docs = write_docs(home / "in", {"a.txt": 5, "b.md": 3, "c.txt": 2})
    out = home / "out" / "books"  # does not exist yet: made by the worker
    jobs = submit_json(e, docs, voice_wav, "-o", str(out), "--format", "m4b")
    assert [j["document"] for j in jobs] == ["a.txt", "b.md", "c.txt"]
    assert [j["output"] for j in jobs] == [str(out / f"{n}.m4b") for n in "abc"]
    assert [j["sentences"] for j in jobs] == [5, 3, 2] and {j["status"] for j in jobs} == {"queued"}
    assert len({j["id"] for j in jobs}) == 3 and external_redis.llen("rq:queue:narrate") == 3
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    for j in jobs:
        assert wait_for_job(j["id"])["status"] == "finished"
    assert sorted(p.name for p in out.iterdir()) == ["a.m4b", "b.m4b", "c.m4b"]
    assert len(synthesized(home)) == 10


def test_one_bad_file_refuses_the_whole_batch_naming_it(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    good = write_docs(home / "in", {"a.txt": 3, "c.txt": 3})
    binary = home / "in" / "b.txt"
    binary.write_bytes(b"\x00\x01binary\x00")
    missing = home / "in" / "gone.txt"
    for bad in (binary, missing):
        line = one_error_line(narrate(e, "submit", str(good[0]), str(bad), str(good[1]), "--voice", str(voice_wav),
                                      "-o", str(home / "out")))  # fmt: skip
        assert str(bad) in line, line
        assert narrate_keys(external_redis) == []  # nothing stored, nothing enqueued


def test_outputs_that_would_collide_are_refused(env, home, voice_wav, external_redis):
    """Two documents with one stem (also only differing in case: one file on macOS), a document
    given twice, or a file name as -o for several documents: refused before anything is stored."""
    e = fake_env(env, home)
    a_txt, a_md, upper = write_docs(home / "in", {"a.txt": 2, "sub/a.md": 2, "A.txt": 2})
    cases = {
        (a_txt, a_md): f"documents {a_txt} and {a_md} would both be written to",
        (a_txt, upper): "would both be written to",
        (a_txt, a_txt): f"document {a_txt} is given twice",
    }
    for docs, want in cases.items():
        line = one_error_line(narrate(e, "submit", *map(str, docs), "--voice", str(voice_wav),
                                      "-o", str(home / "out")))  # fmt: skip
        assert want in line, line
    line = one_error_line(narrate(e, "submit", str(a_txt), str(upper), "--voice", str(voice_wav),
                                  "-o", str(home / "out" / "x.mp3")))  # fmt: skip
    assert "-o is a directory" in line, line
    line = one_error_line(narrate(e, "submit", str(a_txt), "--voice", str(voice_wav),
                                  "-o", str(home / "out" / "x.mp3"), "--format", "wav"))  # fmt: skip
    assert "disagree" in line, line
    assert narrate_keys(external_redis) == []


def test_one_document_keeps_o_as_a_file_or_goes_into_a_directory(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    [doc] = write_docs(home / "in", {"solo.txt": 2})
    [as_file] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "named.flac"))
    assert as_file["output"] == str(home / "out" / "named.flac")
    [in_dir] = submit_json(e, [doc], voice_wav, "-o", str(home / "out"), "--format", "wav")
    assert in_dir["output"] == str(home / "out" / "solo.wav")


def test_an_output_taken_by_another_job_refuses_the_batch(env, home, voice_wav, external_redis):
    """Outputs are checked against the server (a pending job's path) before the first job is
    enqueued, so the batch is refused whole, naming the path."""
    e = fake_env(env, home)
    a, b = write_docs(home / "in", {"a.txt": 2, "b.txt": 2})
    [other] = submit_json(e, [b], voice_wav, "-o", str(home / "out" / "b.mp3"), "--seed", "7")
    line = one_error_line(narrate(e, "submit", str(a), str(b), "--voice", str(voice_wav), "-o", str(home / "out")))
    assert f"output {home / 'out' / 'b.mp3'} is already the target of pending job {other['id']}" in line, line
    assert external_redis.lrange("rq:queue:narrate", 0, -1) == [other["id"].encode()]


def test_the_same_batch_submitted_twice_at_once_gives_one_job_each(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    docs = write_docs(home / "in", {"a.txt": 3, "b.txt": 3, "c.txt": 3})
    args = ["submit", *map(str, docs), "--voice", str(voice_wav), "-o", str(home / "out"), "--json"]
    results: list = [None, None]

    def go(k: int) -> None:
        results[k] = narrate(e, *args)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    runs = [[json.loads(line) for line in r.stdout.splitlines()] for r in results]
    assert [j["id"] for j in runs[0]] == [j["id"] for j in runs[1]]
    for first, second in zip(*runs, strict=True):  # each job: new for one submit, a duplicate for the other
        assert sorted([str(first["duplicate"]), str(second["duplicate"])]) == ["None", "queued"]
    assert external_redis.llen("rq:queue:narrate") == 3
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert len(synthesized(home)) == 9  # every sentence once


def test_wait_follows_every_job_of_a_batch(env, home, voice_wav, external_redis):
    """`--wait` prints each output (or error) and exits 0 only when every job finished."""
    e = fake_env(env, home, NARRATE_FAKE_FAIL_ON="BROKEN", NARRATE_MAX_ATTEMPTS="1")
    good, other = write_docs(home / "in", {"good.txt": 2, "other.txt": 2})
    worker = start_worker(e)
    try:
        ok = narrate(e, "submit", str(good), str(other), "--voice", str(voice_wav), "-o", str(home / "out"), "--wait")
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.splitlines()[-2:] == [str(home / "out" / "good.mp3"), str(home / "out" / "other.mp3")]
        bad = home / "in" / "bad.txt"
        bad.write_text("This is BROKEN.")
        mixed = narrate(e, "submit", str(bad), str(good), "--voice", str(voice_wav), "-o", str(home / "out" / "second"),
                        "--wait")  # fmt: skip
    finally:
        stop_worker(worker)
    assert mixed.returncode == 1 and mixed.stdout, (mixed.stdout, mixed.stderr)
    assert mixed.stdout.splitlines()[-1] == str(home / "out" / "second" / "good.mp3"), (mixed.stdout, mixed.stderr)
    assert "failed: SynthesisError" in mixed.stderr and "Error: 1 of 2 jobs did not finish" in mixed.stderr
