"""The voice library and `--voice NAME|FILE` at submit, in this process against the external Redis:
saved voices (add, list, show, rename, remove and its guard), names, bad samples, preset speakers
checked against a model's config.json, designs refused on the wrong model. Every refusal is one
line, and nothing is stored or enqueued by it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers.audio import write_voice
from helpers.cli import invoke
from helpers.fake import fake_env
from helpers.ops import job_meta, one_error_line
from narrate.jobs.voices import voice_library
from rq.job import Job
from rq.serializers import JSONSerializer


@pytest.fixture
def lib(external_redis, env, home):
    """(env with the external Redis and the fake engine, the Redis client)."""
    return fake_env(env, home), external_redis


def voice(env: dict, *args: str, cwd: Path | None = None):
    return invoke(env, "voice", *args, cwd=cwd)


def listed(env: dict, *args: str) -> list[dict]:
    ran = voice(env, "list", "--json", *args)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def fake_model(root: Path, kind: str, speakers: dict | None = None, size: str = "1b7") -> Path:
    """A directory with only the config.json of a model of `kind` (what the submitting host reads)."""
    root.mkdir(parents=True, exist_ok=True)
    config = {"tts_model_type": kind, "tts_model_size": size, "talker_config": {"spk_id": speakers or {}}}
    (root / "config.json").write_text(json.dumps(config))
    return root


def spec_of(r, job_id: str) -> dict:
    return Job.fetch(job_id, connection=r, serializer=JSONSerializer).args[0]


def submit(env, home, *args: str, out: str = "book.wav") -> dict:
    doc = home / "book.txt"
    doc.write_text("One sentence here. And a second one.\n")
    ran = invoke(env, "submit", str(doc), "--json", "-o", str(home / "out" / out), *args)
    assert ran.returncode == 0, ran.stderr
    return {**json.loads(ran.stdout.splitlines()[0]), "stderr": ran.stderr}


def test_add_list_show_rename_remove(lib, voice_wav):
    env, r = lib
    ran = voice(env, "add", "Alice", str(voice_wav), "--description", "warm alto", "--text", "Hello there.")
    assert ran.returncode == 0, ran.stderr
    assert "voice alice saved" in ran.stdout
    [row] = listed(env)
    assert row["name"] == "alice" and row["kind"] == "clone" and row["description"] == "warm alto"
    assert len(row["sha256"]) == 64 and row["created_at"] and row["text"] == "Hello there."
    assert r.exists(voice_library.sample_key(row["sha256"]))
    shown = json.loads(voice(env, "show", "ALICE", "--json").stdout)
    assert shown["name"] == "alice" and shown["used_by"] == []

    assert voice(env, "rename", "alice", "Beth").returncode == 0
    assert [v["name"] for v in listed(env)] == ["beth"]
    line = one_error_line(voice(env, "show", "alice"))
    assert "no saved voice named 'alice'" in line and "beth" in line

    assert voice(env, "remove", "beth").returncode == 0
    assert listed(env) == [] and not r.exists(voice_library.sample_key(row["sha256"]))


@pytest.mark.parametrize(
    "name, said",
    [("my voice", "is not valid"), ("_x", "is not valid"), ("a" * 65, "is not valid"), ("narrator", "is reserved")],
)
def test_bad_names_are_one_line_and_store_nothing(lib, voice_wav, name, said):
    env, r = lib
    assert said in one_error_line(voice(env, "add", name, str(voice_wav)))
    assert listed(env) == [] and not r.keys("narrate:library-voice:*")


def test_a_name_is_taken_once_whatever_its_case(lib, voice_wav):
    env, _ = lib
    assert voice(env, "add", "alice", str(voice_wav)).returncode == 0
    assert "a voice named 'alice' exists" in one_error_line(voice(env, "add", "ALICE", str(voice_wav)))


@pytest.mark.parametrize(
    "seconds, amplitude, said",
    [(3.0, 0.0, "is silent"), (0.4, 0.3, "give at least 1 s"), (65.0, 0.3, "longer than 60 s")],
)
def test_bad_samples_are_refused_and_nothing_is_stored(lib, tmp_path, seconds, amplitude, said):
    env, r = lib
    sample = write_voice(tmp_path / "s.wav", seconds=seconds, amplitude=amplitude)
    assert said in one_error_line(voice(env, "add", "bad", str(sample)))
    assert listed(env) == [] and not r.keys("narrate:library-voice:*")


def test_submit_by_name_resolves_to_the_sample_and_rename_or_remove_never_changes_the_job(lib, home, voice_wav):
    env, r = lib
    assert voice(env, "add", "alice", str(voice_wav)).returncode == 0
    [rec] = listed(env)
    job = submit(env, home, "--voice", "Alice")
    spec = spec_of(r, job["id"])
    assert spec["voice"] == rec["sha256"] and "instruct" not in spec
    assert job_meta(r, job["id"])["voice_name"] == "alice"

    line = one_error_line(voice(env, "remove", "alice"))  # a queued job names it
    assert f"job {job['id']}" in line and "--force" in line
    assert voice(env, "rename", "alice", "carol").returncode == 0
    assert spec_of(r, job["id"])["voice"] == rec["sha256"]
    ran = voice(env, "remove", "carol", "--force")
    assert ran.returncode == 0 and "keep their copy" in ran.stdout
    assert r.exists(f"narrate:voice:{rec['sha256']}")  # the job's own copy of the sample


def test_unknown_name_and_missing_file_are_one_line_and_enqueue_nothing(lib, home, voice_wav):
    env, r = lib
    assert voice(env, "add", "alice", str(voice_wav)).returncode == 0
    doc = home / "book.txt"
    doc.write_text("One sentence.\n")
    line = one_error_line(invoke(env, "submit", str(doc), "--voice", "zed"))
    assert "no saved voice named 'zed'" in line and "alice" in line
    assert "voice file ./nope.wav does not exist" in one_error_line(
        invoke(env, "submit", str(doc), "--voice", "./nope.wav")
    )
    assert not r.keys("rq:job:*")


def test_a_name_that_is_also_a_file_says_which_is_which(lib, home, voice_wav):
    env, r = lib
    assert voice(env, "add", "alice", str(voice_wav)).returncode == 0
    (home / "alice").write_bytes(voice_wav.read_bytes())
    doc = home / "book.txt"
    doc.write_text("One sentence.\n")
    line = one_error_line(invoke(env, "submit", str(doc), "--voice", "alice", cwd=home))
    assert f"both the file {home / 'alice'} and the saved voice 'alice'" in line and "./alice" in line
    assert not r.keys("rq:job:*")
    ran = invoke(env, "submit", str(doc), "--voice", "./alice", cwd=home)
    assert ran.returncode == 0, ran.stderr


def test_preset_speakers_are_checked_against_the_models_config(lib, home, tmp_path):
    env, r = lib
    custom = fake_model(tmp_path / "cv", "custom_voice", {"Ryan": 3061, "Aiden": 3062})
    doc = home / "book.txt"
    doc.write_text("One sentence.\n")
    line = one_error_line(invoke(env, "submit", str(doc), "--voice", "bob", "--model", str(custom)))
    assert line.endswith("has no speaker 'bob'; its speakers: aiden, ryan")
    job = submit(env, home, "--voice", "Ryan", "--model", str(custom), "--instruct", "calm, warm narrator")
    spec = spec_of(r, job["id"])
    assert spec["voice"] == "preset:ryan" and spec["instruct"] == "calm, warm narrator"
    rows = listed(env, "--model", str(custom))
    assert [(v["name"], v["kind"], v["speaker"]) for v in rows] == [
        ("aiden", "preset", "aiden"),
        ("ryan", "preset", "ryan"),
    ]


def test_instruct_on_a_model_that_ignores_it_is_a_warning(lib, home, tmp_path, voice_wav):
    env, r = lib
    small = fake_model(tmp_path / "cv06", "custom_voice", {"ryan": 3061}, size="0b6")
    job = submit(env, home, "--voice", "ryan", "--model", str(small), "--instruct", "whisper")
    assert "warning: --instruct is ignored" in job["stderr"] and "0.6B" in job["stderr"]
    assert "instruct" not in spec_of(r, job["id"])
    job = submit(env, home, "--voice", str(voice_wav), "--instruct", "whisper", out="cloned.wav")
    assert "warning: --instruct is ignored: a cloned voice" in job["stderr"]


def test_a_preset_on_a_base_model_and_a_sample_on_a_custom_voice_model_are_refused(lib, home, tmp_path, voice_wav):
    env, r = lib
    base = fake_model(tmp_path / "base", "base")
    custom = fake_model(tmp_path / "cv", "custom_voice", {"ryan": 3061})
    doc = home / "book.txt"
    doc.write_text("One sentence.\n")
    line = one_error_line(invoke(env, "submit", str(doc), "--voice", "ryan", "--model", str(base)))
    assert "'ryan' is a preset speaker, but model" in line and "is a Base model" in line and "CustomVoice" in line
    line = one_error_line(invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--model", str(custom)))
    assert "is a CustomVoice model: it speaks preset speakers (ryan), not a sample" in line
    assert not r.keys("rq:job:*")


def test_a_description_needs_a_voice_design_model(lib, tmp_path):
    env, r = lib
    base = fake_model(tmp_path / "base", "base")
    line = one_error_line(voice(env, "design", "old", "Female, 60s, raspy", "--model", str(base), "--no-wait"))
    assert "a voice described in words needs a VoiceDesign model" in line
    assert "the description is empty" in one_error_line(voice(env, "design", "old", "  ", "--no-wait"))
    assert "no design named 'old'" in one_error_line(voice(env, "keep", "old", "1"))
    assert not r.keys("rq:job:*")


def test_a_schedule_pins_the_name_it_was_added_with(lib, home, voice_wav):
    env, r = lib
    assert voice(env, "add", "alice", str(voice_wav)).returncode == 0
    (home / "watched").mkdir()
    ran = invoke(
        env, "schedule", "add", "nightly", "--cron", "0 2 * * *", "--watch", str(home / "watched"), "--voice", "alice"
    )
    assert ran.returncode == 0, ran.stderr
    assert "schedule nightly" in one_error_line(voice(env, "remove", "alice"))
    assert invoke(env, "schedule", "remove", "nightly").returncode == 0
    assert voice(env, "remove", "alice").returncode == 0


def test_a_schedule_keeps_its_cast_and_each_tick_reads_documents_with_it(lib, home, voice_wav, tmp_path):
    """`schedule add` with a cast: its samples are kept with the schedule, every tick reads the
    folder's documents with the cast's markup, and the job's spec carries the voices a document uses."""
    env, r = lib
    alice = write_voice(tmp_path / "alice.wav", seconds=2.0, amplitude=0.2)
    assert voice(env, "add", "alice", str(alice)).returncode == 0
    (home / "watched").mkdir()
    story = home / "watched" / "story.txt"
    story.write_text('The night was long. [alice] "We should leave."\n\nThe end.\n')
    os.utime(story, (time.time() - 60, time.time() - 60))  # written a minute ago: not still being written
    ran = invoke(
        env,
        "schedule",
        "add",
        "tales",
        "--cron",
        "0 2 * * *",
        "--watch",
        str(home / "watched"),
        "--voice",
        str(voice_wav),
        "--voice",
        "alice=alice",
    )
    assert ran.returncode == 0, ran.stderr
    assert voice(env, "remove", "alice").returncode == 1  # the schedule was added with its name
    assert voice(env, "remove", "alice", "--force").returncode == 0  # the schedule keeps its own copy
    ran = invoke(env, "schedule", "run", "tales", "--json")
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert len(report["submitted"]) == 1, json.dumps(report)
    [sub] = report["submitted"]
    spec = spec_of(r, sub["job"])
    [rec] = [json.loads(v) for v in r.hvals("narrate:schedules")]
    assert spec["cast"] == {"alice": {"voice": rec["cast"]["voices"]["alice"]["voice"], "instruct": None, "seed": None}}
    assert r.exists(f"narrate:voice:{spec['cast']['alice']['voice']}")  # stored with the job
    assert invoke(env, "schedule", "remove", "tales").returncode == 0
    assert not r.keys("narrate:schedule-voice:*")
