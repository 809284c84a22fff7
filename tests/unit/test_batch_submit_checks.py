"""`narrate submit a.txt b.md c.txt` checks every file and output before anything is enqueued: one
job each, named after its document, or the whole batch refused naming the file."""

from __future__ import annotations

from helpers.books import write_docs
from helpers.cli import invoke
from helpers.fake import fake_env
from helpers.ops import narrate_keys, one_error_line, submit_json


def test_one_bad_file_refuses_the_whole_batch_naming_it(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    good = write_docs(home / "in", {"a.txt": 3, "c.txt": 3})
    binary = home / "in" / "b.txt"
    binary.write_bytes(b"\x00\x01binary\x00")
    missing = home / "in" / "gone.txt"
    for bad in (binary, missing):
        line = one_error_line(
            invoke(
                e, "submit", str(good[0]), str(bad), str(good[1]), "--voice", str(voice_wav), "-o", str(home / "out")
            )
        )
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
        line = one_error_line(invoke(e, "submit", *map(str, docs), "--voice", str(voice_wav), "-o", str(home / "out")))
        assert want in line, line
    line = one_error_line(
        invoke(e, "submit", str(a_txt), str(upper), "--voice", str(voice_wav), "-o", str(home / "out" / "x.mp3"))
    )
    assert "-o is a directory" in line, line
    line = one_error_line(
        invoke(e, "submit", str(a_txt), "--voice", str(voice_wav), "-o", str(home / "out" / "x.mp3"), "--format", "wav")
    )
    assert "disagree" in line, line
    assert narrate_keys(external_redis) == []


def test_one_document_keeps_o_as_a_file_or_goes_into_a_directory(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    [doc] = write_docs(home / "in", {"solo.txt": 2})
    [as_file] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "named.flac"), run=invoke)
    assert as_file["output"] == str(home / "out" / "named.flac")
    [in_dir] = submit_json(e, [doc], voice_wav, "-o", str(home / "out"), "--format", "wav", run=invoke)
    assert in_dir["output"] == str(home / "out" / "solo.wav")


def test_an_output_taken_by_another_job_refuses_the_batch(env, home, voice_wav, external_redis):
    """Outputs are checked against the server (a pending job's path) before the first job is
    enqueued, so the batch is refused whole, naming the path."""
    e = fake_env(env, home)
    a, b = write_docs(home / "in", {"a.txt": 2, "b.txt": 2})
    [other] = submit_json(e, [b], voice_wav, "-o", str(home / "out" / "b.mp3"), "--seed", "7", run=invoke)
    line = one_error_line(invoke(e, "submit", str(a), str(b), "--voice", str(voice_wav), "-o", str(home / "out")))
    assert f"output {home / 'out' / 'b.mp3'} is already the target of pending job {other['id']}" in line, line
    assert external_redis.lrange("rq:queue:narrate", 0, -1) == [other["id"].encode()]
