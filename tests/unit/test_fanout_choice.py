"""Whether a book fans out: a bad --fan-out is refused at submit; by default chapters only with two
worker hosts."""

from __future__ import annotations

import pytest
from helpers.cli import invoke

CHAPTERS, PER_CHAPTER = 4, 10


@pytest.mark.parametrize("value", ["chapter"])
def test_bad_fan_out_is_refused(env, home, voice_wav, value):
    doc = home / "b.txt"
    doc.write_text("Chapter 1\n\nOne. Two.\n\nChapter 2\n\nThree.")
    proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--fan-out", value)
    assert proc.returncode != 0 and "--fan-out" in proc.stderr


def test_default_fans_out_chapters_only_with_two_worker_hosts(external_redis):
    """The default rule: chapters when the document has chapters and two hosts have registered workers."""
    from narrate.jobs.documents.documents import Document
    from narrate.jobs.fanout import split as fanout
    from rq import Queue, Worker

    doc = Document(
        title="b", paragraphs=[["Chapter 1"], ["One."], ["Chapter 2"], ["Two."]], chapters=[(0, "1"), (2, "2")]
    )
    plain = Document(title="p", paragraphs=[["One."], ["Two."]], chapters=[])
    q = Queue("fanout-default", connection=external_redis)
    assert fanout.choose(external_redis, doc, None) == "none"
    for n, h in enumerate(["host-a", "host-a", "host-b"]):
        w = Worker([q], connection=external_redis, name=f"w{n}")
        w.register_birth()
        external_redis.hset(w.key, fanout.HOST_FIELD, h)
        if n == 1:
            assert fanout.choose(external_redis, doc, None) == "none"  # two workers, one host
    assert fanout.choose(external_redis, doc, None) == "chapters"
    assert fanout.choose(external_redis, plain, None) == "none"
    assert fanout.choose(external_redis, doc, "none") == "none"
    assert fanout.cut(doc, "chapters") == [(0, 2), (2, 4)]
