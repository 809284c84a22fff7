"""Values a user would trust, and limits that were missing: decimals as written, subtitle and tag
text that cannot break its file, bounds on pauses and frame caps (and a worker that checks a job's
values from Redis), cron's random fields, '#' inside a lexicon entry, the batch log of continuous
batches."""

from __future__ import annotations

import logging

import pytest
from helpers.cli import invoke
from narrate.jobs.api.options import Options
from narrate.jobs.audio.assemble import tags_for
from narrate.jobs.audio.subtitles import Cue, srt, vtt
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.documents.documents import BookMeta
from narrate.jobs.documents.lexicon import parse_lexicon
from narrate.jobs.documents.normalize import normalize
from narrate.jobs.errors import BadInput
from narrate.jobs.schedules.cron import check_cron
from narrate.jobs.settings import Settings
from narrate.jobs.task.batch_log import BatchLog


@pytest.mark.parametrize(
    ("text", "language", "spoken"),
    [
        ("It costs 1.10 now.", "en", "It costs one point one zero now."),
        ("It is 1.1 now.", "en", "It is one point one now."),
        (
            "Pi is 3.14159265358979323846.",
            "en",
            "Pi is three point one four one five nine two six five three five eight nine seven nine three two three "
            "eight four six.",
        ),
        ("Es kostet 1,10 Euro.", "de", "Es kostet eins Komma eins null Euro."),
        ("Il costo è 1,25.", "it", "Il costo è uno virgola due cinque."),
        ("Il fait -2,50 degrés.", "fr", "Il fait moins deux virgule cinq zéro degrés."),
        ("Минус -0,5.", "ru", "Минус минус ноль целых пять десятых."),  # the sign was lost
    ],
)
def test_decimals_are_read_as_written(text, language, spoken):
    assert normalize(text, language) == spoken


def test_cue_text_cannot_end_its_cue_or_open_a_tag():
    cues = [Cue(0, 0, 24_000, None, "a ---> b ----> c \x1b[31mred\x07 <i>x</i> & y\nz")]
    s, v = srt(cues, 24_000), vtt(cues, 24_000)
    for text in (s, v):
        body = text.split("\n")[-2]
        assert "-->" not in body and "\x1b" not in body and "\x07" not in body
    assert s.split("\n")[2] == "a -> b -> c [31mred <i>x</i> & y z"
    assert v.split("\n")[-2] == "a -&gt; b -&gt; c [31mred &lt;i&gt;x&lt;/i&gt; &amp; y z"


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"narrator": "Ann\x1b[31m"}, "--narrator .* control character"),
        ({"author": "two\nlines"}, "--author .* line break"),
        ({"narrator": "x" * 201}, "--narrator: 201 characters"),
        ({"year": "nineteen"}, "--year 'nineteen'"),
        ({"year": "2026-13-45-1"}, "--year"),
    ],
)
def test_tags_from_the_command_line_are_checked(kw, says):
    with pytest.raises(BadInput, match=says):
        Options.make(**kw)


def test_a_documents_own_tags_are_cleaned_and_its_cover_checked():
    spec = JobSpec(document="d", voice="a" * 64, output="o.m4b")
    meta = BookMeta("Title\x07 with\nbell", "Au\x1bthor", "en", b"not an image at all", "image/jpeg")
    tags = tags_for(spec, None, meta, None)
    assert (tags.title, tags.author, tags.cover) == ("Title with bell", "Author", None)
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    assert tags_for(spec, None, BookMeta("T", "", "en", png, "image/png"), None).cover == png
    huge = b"\xff\xd8\xff" + b"\0" * (11 * 1024 * 1024)
    assert tags_for(spec, None, BookMeta("T", "", "en", huge, "image/jpeg"), None).cover is None
    assert Options.make(year=" 2026-12-01", narrator="Ann ").book.year == "2026-12-01"


def test_pauses_and_frame_caps_are_bounded(env):
    with pytest.raises(BadInput, match="at most 60000"):
        Settings.from_env(sentence_pause_ms=1_000_000_000)
    ran = invoke(env, "submit", "x.txt", "--voice", "v.wav", "--sentence-pause", "1000000000")
    assert ran.returncode == 2 and "--sentence-pause" in ran.stderr
    ran = invoke(env, "submit", "x.txt", "--voice", "v.wav", "--max-frames", "0")
    assert ran.returncode == 2 and "--max-frames" in ran.stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_frames", 0),
        ("max_frames", -5),
        ("max_frames", 10**9),
        ("loudness", -300.0),
        ("loudness", float("nan")),
        ("sentence_pause_ms", 10**9),
        ("subtitles", "ass"),
        ("split", "pages"),
        ("max_part_hours", -1),
        ("seed", "zero"),
        ("lexicon", [["a"]]),
        ("output", ""),
    ],
)
def test_a_job_spec_from_redis_is_checked_by_the_worker(field, value):
    data = JobSpec(document="d", voice="a" * 64, output="o.mp3").to_json() | {field: value}
    with pytest.raises(BadSpec, match=field):
        JobSpec.from_json(data)


def test_a_good_job_spec_reads_back():
    spec = JobSpec(
        document="d",
        voice="a" * 64,
        output="o.mp3",
        subtitles="srt,vtt",
        split="chapters",
        loudness=-16.0,
        lexicon=[["a", "b"]],
    )
    assert JobSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("expr", ["R 2 * * *", "0 R(1-3) * * *", "0 2 R * *", "0,R 2 * * *"])
def test_a_random_cron_field_is_refused(expr):
    with pytest.raises(BadInput, match="random field"):
        check_cron(expr)


@pytest.mark.parametrize("expr", ["0 2 * * mon-fri", "0 2 * mar,apr *", "@daily", "17 2 * * 1"])
def test_names_with_an_r_are_not_random(expr):
    assert check_cron(expr)


def test_a_hash_inside_an_entry_is_not_a_comment():
    entries = parse_lexicon("# pronunciations\nC# = C sharp\nF# = F sharp  # the language\n\n  # indented\nX = ex")
    assert entries == [["C#", "C sharp"], ["F#", "F sharp"], ["X", "ex"]]


class _Counts:
    done, total = 0, 4


def test_the_batch_log_counts_a_continuous_batchs_frames_to_it(caplog):
    """With continuous batching the next batch starts while rows of this one still run: its line
    said "0 frames in 6.6 s" when all its chunks came after the next batch started."""
    counts = _Counts()
    log = BatchLog("job-1", todo=4, progress=counts)
    with caplog.at_level(logging.INFO, logger="narrate.jobs"):
        log.start([0, 1])
        log.chunk(5, 4_800, index=0)
        log.start([2, 3])  # rows 0 and 1 still run
        log.chunk(7, 4_800, index=1)
        log.chunk(3, 2_400, index=0, final=True)
        counts.done = 1
        log.chunk(2, 2_400, index=2)
        counts.done = 2
        log.chunk(1, 2_400, index=1, final=True)  # batch 1 ends here
        log.chunk(4, 2_400, index=3, final=True)
        log.chunk(6, 2_400, index=2, final=True)  # batch 2 ends here
        counts.done = 4
        log.finish()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("job job-1: batch 1/2: 2 sentences, 16 frames in "), lines[0]
    assert lines[1].startswith("job job-1: batch 2/2: 2 sentences, 12 frames in "), lines[1]
