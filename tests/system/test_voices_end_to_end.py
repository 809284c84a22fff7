"""Voices by name end to end, through the queue and a real worker process on the real tiny engine
(random-weight checkpoints of the three Qwen3-TTS kinds): a saved voice, a preset speaker and a
designed-then-kept voice each narrate a book; `voice list --json` shows all three kinds; a preview
comes back as a WAV; a speaker the worker's model lacks fails the job with the speakers listed."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.audio import decoded_samples
from helpers.ops import one_error_line, submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job

DOC = "The first paragraph has two sentences. Here is the second one.\n\nA last short paragraph.\n"
SAMPLES_PER_FRAME = 1920


def speakers_of(checkpoint: Path) -> list[str]:
    config = json.loads((checkpoint / "config.json").read_text())
    return sorted(s.lower() for s in config["talker_config"]["spk_id"])


def finished_book(job_id: str, out: Path) -> dict:
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    res = st["result"]
    assert res["sentences"] == 3 and out.exists()
    pcm = decoded_samples(out)
    assert pcm.size == res["samples"] and abs(pcm.astype(float)).max() > 0
    return res


def test_saved_preset_and_designed_voices_each_narrate_a_book(
    env, home, voice_wav, custom_voice_checkpoint, voice_design_checkpoint
):
    doc = home / "book.txt"
    doc.write_text(DOC)
    out = home / "out"
    speaker = speakers_of(custom_voice_checkpoint)[0]
    worker = start_worker(env)
    try:
        # 1. A saved voice.
        ran = narrate(env, "voice", "add", "Alice", str(voice_wav), "--description", "a test alto")
        assert ran.returncode == 0, ran.stderr
        [job] = submit_json(env, [doc], "alice", "-o", str(out / "alice.wav"))
        res = finished_book(job["id"], out / "alice.wav")
        assert res["voice_cache"] == "miss" and res["speaker_encoder_runs"] == 1

        # 2. A preset speaker of a CustomVoice model, with an instruction.
        [job] = submit_json(
            env,
            [doc],
            speaker.upper(),
            "-o",
            str(out / "preset.wav"),
            "--model",
            str(custom_voice_checkpoint),
            "--instruct",
            "calm, warm narrator",
        )
        res = finished_book(job["id"], out / "preset.wav")
        assert res["speaker_encoder_runs"] == 0 and res["model"] == str(custom_voice_checkpoint)

        # 3. A designed voice: candidates made by one job, one kept, a book read from it by Base.
        design_env = dict(env, NARRATE_MAX_FRAMES="20")  # 1.6 s candidates: long enough to keep as a sample
        described = "Female, 60s, low raspy alto, unhurried"
        ran = narrate(
            design_env,
            "voice",
            "design",
            "Gran",
            described,
            "--candidates",
            "2",
            "--model",
            str(voice_design_checkpoint),
            "-o",
            str(home / "cands"),
        )
        assert ran.returncode == 0, ran.stderr
        files = [Path(p) for p in ran.stdout.split()]
        assert [p.name for p in files] == ["gran-1.wav", "gran-2.wav"]
        clips = [decoded_samples(p) for p in files]
        assert all(c.size == 20 * SAMPLES_PER_FRAME for c in clips)
        assert clips[0].tobytes() != clips[1].tobytes()  # two seeds, two candidates
        shown = json.loads(narrate(env, "voice", "show", "gran", "--json").stdout)
        assert shown["kind"] == "design (not kept yet)" and shown["candidates"] == 2
        assert "has candidates 1 to 2" in one_error_line(narrate(env, "voice", "keep", "gran", "3"))
        ran = narrate(env, "voice", "keep", "gran", "2")
        assert ran.returncode == 0, ran.stderr
        [job] = submit_json(env, [doc], "gran", "-o", str(out / "gran.wav"))
        finished_book(job["id"], out / "gran.wav")

        # 4. A preview of a saved voice, as a WAV here.
        ran = narrate(env, "voice", "preview", "alice", "--text", "Hello there.", "-o", str(home / "hello.wav"))
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == str(home / "hello.wav")
        assert decoded_samples(home / "hello.wav").size > 0

    finally:
        log = stop_worker(worker)
    assert "Traceback" not in log, log

    # 5. A speaker the worker's model lacks, where the submitting host cannot tell (no --model, and
    # its NARRATE_MODEL is unknown here): the worker fails the job with one line listing its speakers.
    missing = next(
        n for n in ("vivian", "serena", "eric", "dylan", "sohee") if n not in speakers_of(custom_voice_checkpoint)
    )
    (home / "other.txt").write_text("Another book.\n")
    [job] = submit_json(
        dict(env, NARRATE_MODEL="some-org/unknown-model"), [home / "other.txt"], missing, "-o", str(out / "missing.wav")
    )
    worker = start_worker(dict(env, NARRATE_MODEL=str(custom_voice_checkpoint)))
    try:
        st = wait_for_job(job["id"])
    finally:
        stop_worker(worker)
    assert st["status"] == "failed", st
    listed = ", ".join(speakers_of(custom_voice_checkpoint))
    want = f"model {custom_voice_checkpoint} has no speaker {missing!r}; its speakers: {listed}"
    assert st["error"] == want, st["error"]

    rows = json.loads(narrate(env, "voice", "list", "--json", "--model", str(custom_voice_checkpoint)).stdout)
    kinds = {r["name"]: r["kind"] for r in rows}
    assert kinds["alice"] == "clone" and kinds["gran"] == "designed" and kinds[speaker] == "preset", rows
    gran = next(r for r in rows if r["name"] == "gran")
    assert gran["description"] == "Female, 60s, low raspy alto, unhurried" and len(gran["sha256"]) == 64
    assert all(r["created_at"] for r in rows if r["kind"] != "preset")
    assert all(r["speaker"] for r in rows if r["kind"] == "preset")


def test_run_takes_a_saved_voice_on_the_embedded_server_and_a_removed_one_is_refused(env, home, voice_wav):
    """`narrate run --voice NAME`: the name is read from the library of the embedded server (started
    for the lookup, then by run itself); once the voice is removed, the same command is one line."""
    doc = home / "short.txt"
    doc.write_text("Just one sentence here.\n")
    assert narrate(env, "voice", "add", "me", str(voice_wav)).returncode == 0
    ran = narrate(env, "run", str(doc), "--voice", "me", "-o", str(home / "short.wav"))
    assert ran.returncode == 0, ran.stderr
    assert decoded_samples(home / "short.wav").size > 0
    assert narrate(env, "voice", "remove", "me").returncode == 0
    line = one_error_line(narrate(env, "run", str(doc), "--voice", "me", "-o", str(home / "again.wav")))
    assert "no saved voice named 'me'" in line
    assert not (home / "again.wav").exists()
