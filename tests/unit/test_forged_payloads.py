"""Job payloads are JSON with ids and relative paths, and a forged result cannot make a host send
other files."""

from __future__ import annotations

import json

from helpers.cli import invoke
from helpers.ops import submit


def test_job_payloads_are_json_with_relative_paths(env, home, voice_wav, external_redis):
    """Every job hash holds JSON (no pickle), and its arguments hold ids and a relative path."""
    import zlib

    doc = home / "s4.txt"
    doc.write_text("Only ids travel.")
    submit(env, doc, voice_wav, home / "out" / "s4.wav", run=invoke)
    keys = [k for k in external_redis.keys("rq:job:*") if external_redis.type(k) == b"hash"]
    assert keys
    for key in keys:
        data = external_redis.hget(key, "data")
        payload = json.loads(zlib.decompress(data))
        assert not data.startswith(b"\x80")
        assert str(home) not in json.dumps(payload) and "/tmp" not in json.dumps(payload)


def test_a_forged_result_cannot_make_a_host_send_other_files(env, home):
    """`narrate fetch` is answered from the job's result, which anyone who can write to Redis can
    forge: the host sends only a regular file under its output root, reached without following
    links, whose content is what the job recorded (sha256)."""
    import hashlib
    import os

    import pytest
    from narrate.jobs.errors import NarrateError
    from narrate.jobs.fanout.fetch import _open_output
    from narrate.jobs.settings import Settings

    settings = Settings.from_env()
    out = home / "out"
    secret = home / "secret.txt"
    secret.write_text("the host's private key")
    book = out / "book.mp3"
    book.write_bytes(b"narrated")
    (out / "link.mp3").symlink_to(secret)
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (secret, book)}
    refused = {
        secret: (sha[secret], "not under this host's output root"),
        out / ".." / "secret.txt": (sha[secret], "must be a plain path"),
        out / "link.mp3": (sha[secret], None),  # O_NOFOLLOW: an OSError, sent as "not on its host any more"
        book: ("0" * 64, "checksum differs"),
        out: ("", "not under this host's output root"),
    }
    for path, (want, why) in refused.items():
        with pytest.raises((NarrateError, OSError)) as e:
            os.close(_open_output(settings, path, want))
        assert why is None or why in str(e.value), (path, e.value)
    fd = _open_output(settings, book, sha[book])
    with os.fdopen(fd, "rb") as f:
        assert f.read() == b"narrated"
