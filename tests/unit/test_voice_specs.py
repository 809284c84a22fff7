"""The voice in a job spec and a clip spec, as a worker reads them from Redis (anything may be
there): what a submit makes reads back, forged values are refused naming the field; checkpoint
keys name the voice by identity; the library under races and stale state."""

from __future__ import annotations

import threading

import pytest
from narrate.jobs.audio.samples import read_voice
from narrate.jobs.book.plan import make_plan
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.documents.documents import Document
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.voices import voice_library
from narrate.jobs.voices.clips import BadClipSpec, ClipSpec
from narrate.jobs.voices.names import check_name

SHA = "ab" * 32


@pytest.mark.parametrize(
    "voice, instruct",
    [
        ("preset:../../etc", None),
        ("preset:", None),
        ("preset:Ryan", None),  # a submit writes lower case
        ("design", "a voice"),  # books are never read in a designed voice
        ("design", None),
        ("nothex" * 10, None),
        (SHA, "an instruction for a sample"),
        ("preset:ryan", ""),
        ("preset:ryan", "x" * 1001),
        ("preset:ryan", 7),
        (7, None),
    ],
)
def test_a_forged_voice_in_a_job_spec_is_refused(voice, instruct):
    data = JobSpec(document="d", voice=SHA, output="o.mp3").to_json() | {"voice": voice, "instruct": instruct}
    with pytest.raises(BadSpec, match="job spec"):
        JobSpec.from_json(data)


def test_what_a_submit_makes_reads_back_and_an_old_spec_is_unchanged():
    old = JobSpec(document="d", voice=SHA, output="o.mp3").to_json()
    assert "instruct" not in old  # job ids of earlier versions stay the same
    assert JobSpec.from_json(old).voice_ref == VoiceRef.clone(SHA)
    preset = JobSpec(document="d", voice="preset:ryan", output="o.mp3", instruct="calm").to_json()
    assert JobSpec.from_json(preset).voice_ref == VoiceRef.preset("ryan", "calm")


def test_checkpoint_keys_name_the_voice_by_identity():
    doc = Document("t", [["One sentence.", "Another one."]], [], "en")

    def keys(voice: str, instruct: str | None = None) -> list[str]:
        return make_plan(doc, JobSpec(document="d", voice=voice, output="o.wav", instruct=instruct), "m", "bf16").keys

    assert keys(SHA) == keys(SHA)  # a resubmitted book reuses its sentences
    assert keys("preset:ryan") != keys("preset:aiden") != keys(SHA)
    assert keys("preset:ryan", "calm") != keys("preset:ryan", "excited") != keys("preset:ryan")


@pytest.mark.parametrize(
    "field, value",
    [
        ("seeds", []),
        ("seeds", list(range(9))),
        ("seeds", [-1]),
        ("seeds", [True]),
        ("text", ""),
        ("text", "x" * 401),
        ("max_frames", 0),
        ("keep_s", 1),
        ("voice", "preset:../x"),
        ("voice", "design"),
    ],
)
def test_a_forged_clip_spec_is_refused(field, value):
    good = ClipSpec("Hello.", "preset:ryan", [1, 2]).to_json()
    assert ClipSpec.from_json(good).ref == VoiceRef.preset("ryan")
    with pytest.raises(BadClipSpec):
        ClipSpec.from_json(good | {field: value})
    with pytest.raises(BadClipSpec, match="unknown"):
        ClipSpec.from_json(good | {"func": "os.system"})


@pytest.mark.parametrize("name", ["ålice", "a b", "a/b", "../x", "", "a" * 65, "Ω"])
def test_names_outside_the_slug_rule_are_refused(name):
    with pytest.raises(BadInput, match="is not valid"):
        check_name(name)


def test_two_adds_of_one_name_at_once_save_one(external_redis, voice_wav):
    sample = read_voice(voice_wav, ffmpeg_exe())
    results: list[str] = []
    barrier = threading.Barrier(8)

    def add(i: int) -> None:
        record = voice_library.VoiceRecord("same", "clone", sample.sha256, sample.seconds, f"try {i}")
        barrier.wait()
        try:
            voice_library.add(external_redis, record, sample)
            results.append("saved")
        except BadInput:
            results.append("refused")

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["refused"] * 7 + ["saved"]
    assert [v.name for v in voice_library.all_voices(external_redis)] == ["same"]


def test_a_saved_voice_whose_sample_is_gone_or_damaged_says_what_to_do(external_redis, voice_wav):
    sample = read_voice(voice_wav, ffmpeg_exe())
    record = voice_library.add(
        external_redis, voice_library.VoiceRecord("v1", "clone", sample.sha256, sample.seconds), sample
    )
    external_redis.set(voice_library.sample_key(sample.sha256), b"RIFF damaged")
    with pytest.raises(NarrateError, match="damaged on the server; remove the voice and add it again"):
        voice_library.sample(external_redis, record)
    external_redis.delete(voice_library.sample_key(sample.sha256))
    with pytest.raises(NarrateError, match="gone from the server"):
        voice_library.sample(external_redis, record)


def test_two_names_for_one_sample_keep_it_until_the_last_goes(external_redis, voice_wav):
    sample = read_voice(voice_wav, ffmpeg_exe())
    for name in ("a", "b"):
        voice_library.add(
            external_redis, voice_library.VoiceRecord(name, "clone", sample.sha256, sample.seconds), sample
        )
    voice_library.remove(external_redis, "a")
    assert voice_library.sample(external_redis, voice_library.get(external_redis, "b")).sha256 == sample.sha256
    voice_library.remove(external_redis, "b")
    assert not external_redis.exists(voice_library.sample_key(sample.sha256))
