"""A cast of voices end to end, through the queue and a real worker process on the real tiny engine:
a narrator and two characters by markup, by `--dialogue-voice` and by each importer; each sentence
is spoken by the voice it was given (its checkpointed audio is bit-exact with that sentence
synthesized alone in that voice: the row used that voice's embedding); `[Fireball]` and `\\[x]` are
read as text and no tag reaches the spoken text or the subtitles; recasting one character renders
only its sentences again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from helpers.audio import write_voice
from helpers.ops import one_error_line
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.book.plan import make_plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.server import store
from narrate.jobs.server.connection import Connection
from narrate.jobs.server.records import fetch
from narrate.jobs.settings import Settings

MARKUP = (
    'The night was long. [alice] "We should leave," she said.\n\n'
    "[bob] No. We stay. [narrator] He cast [Fireball] at the door, and wrote \\[x] on the wall.\n\n"
    "The end came quietly.\n"
)
DIALOGUE = "The night was long.\n\n\u201cWe should leave now.\u201d\n\nShe did not wait for an answer.\n"
IMPORTED = {
    "e2a": "The night was long.\n\n[voice:alice]We should leave.[/voice]\n\n[voice:bob]No. We stay.[/voice]\n",
    "abogen": "The night was long.\n\n<<VOICE:alice>>We should leave.\n\n<<VOICE:bob>>No. We stay.\n",
    "jsonl": '{"speaker": "narrator", "text": "The night was long."}\n'
    '{"speaker": "alice", "text": "We should leave."}\n{"speaker": "bob", "text": "No. We stay."}\n',
    "lines": "Narrator: The night was long.\nAlice: We should leave.\nBob: No. We stay.\n",
}


@pytest.fixture
def samples(tmp_path) -> dict[str, Path]:
    return {
        "narrator": write_voice(tmp_path / "narrator.wav", seconds=3.0),
        "alice": write_voice(tmp_path / "alice.wav", seconds=2.5, amplitude=0.25),
        "bob": write_voice(tmp_path / "bob.wav", seconds=2.0, amplitude=0.2),
        "bob2": write_voice(tmp_path / "bob2.wav", seconds=1.5, amplitude=0.35),
    }


def cast_args(samples: dict[str, Path], bob: str = "bob") -> list[str]:
    return [
        "--voice",
        str(samples["narrator"]),
        "--voice",
        f"alice={samples['alice']}",
        "--voice",
        f"bob={samples[bob]}",
    ]


def submit(env, doc: Path, out: Path, *args: str) -> dict:
    ran = narrate(env, "submit", str(doc), "-o", str(out), "--json", *args)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[0])


def spoken_by(job_id: str) -> tuple[JobSpec, list]:
    """The job's spec and its plan's sentences (each with its voice label)."""
    with Connection(Settings.from_env()) as conn:
        job = fetch(conn.redis, job_id)
        spec = JobSpec.from_json(job.args[0])
        doc = store.get_document(conn.redis, spec.document)
    return spec, doc


def test_a_narrator_and_two_characters_by_markup_dialogue_and_each_importer(
    env, home, samples, checkpoint, monkeypatch
):
    # 16 frames a sentence: over 6, a voice changes the sampled codes of every sentence (on random weights a
    # few frames may come out the same in two voices), which the check of each row's voice below relies on.
    env = dict(env, NARRATE_MAX_FRAMES="16")
    monkeypatch.setenv("NARRATE_MAX_FRAMES", "16")
    out = home / "out"
    jobs: dict[str, str] = {}
    worker = start_worker(env)
    try:
        book = home / "markup.txt"
        book.write_text(MARKUP)
        first = submit(env, book, out / "markup.wav", *cast_args(samples), "--subtitles", "vtt,srt")
        jobs["markup"] = first["id"]
        dialogue = home / "dialogue.txt"
        dialogue.write_text(DIALOGUE)
        jobs["dialogue"] = submit(
            env,
            dialogue,
            out / "dialogue.wav",
            "--voice",
            str(samples["narrator"]),
            "--dialogue-voice",
            str(samples["alice"]),
        )["id"]
        for name, text in IMPORTED.items():
            doc = home / f"{name}.txt"
            doc.write_text(text)
            jobs[name] = submit(env, doc, out / f"{name}.wav", *cast_args(samples), "--markup", name)["id"]
        results = {name: wait_for_job(job_id) for name, job_id in jobs.items()}
        for name, st in results.items():
            assert st["status"] == "finished", (name, st)

        # Recast bob: only bob's sentences are synthesized again.
        recast = submit(env, book, out / "recast.wav", *cast_args(samples, bob="bob2"))
        again = wait_for_job(recast["id"])
    finally:
        log = stop_worker(worker)
    assert "Traceback" not in log, log

    res = results["markup"]["result"]
    assert res["voices"]["alice"]["sentences"] == 1 and res["voices"]["bob"]["sentences"] == 2, res["voices"]
    assert again["status"] == "finished" and again["result"]["synthesized"] == res["voices"]["bob"]["sentences"]
    for name in IMPORTED:
        assert set(results[name]["result"]["voices"]) == {"narrator", "alice", "bob"}, name
    assert set(results["dialogue"]["result"]["voices"]) == {"narrator", "dialogue"}

    vtt = (out / "markup.vtt").read_text()
    srt = (out / "markup.srt").read_text()
    assert "<v alice>" in vtt and "<v bob>" in vtt and "<v " not in srt
    assert "[Fireball]" in vtt and "[x]" in vtt and "\\[" not in vtt
    for tag in ("[alice]", "[bob]", "[narrator]"):
        assert tag not in vtt and tag not in srt

    check_each_sentence_in_its_voice(env, home, jobs["markup"], samples, checkpoint)


def check_each_sentence_in_its_voice(env, home, job_id, samples, checkpoint):
    """Every checkpointed sentence of the job equals that sentence synthesized alone, in this
    process, in the voice its label names; and in another voice it differs (in some sentence of each voice at
    least: the tiny random checkpoint in float32, a CPU's default, may speak a short sentence alike in two voices)."""
    from narrate.jobs.audio.samples import read_voice
    from narrate.jobs.ffmpeg import ffmpeg_exe
    from narrate.worker.engine.mlx_engine import MlxEngine
    from narrate.worker.engine.models import load, resolve

    spec, doc = spoken_by(job_id)
    loaded = load(resolve(str(checkpoint), spec.quant))
    engine = MlxEngine(loaded)
    plan = make_plan(doc, spec, loaded.key, loaded.resolved.quant)
    voiced = {"narrator": "narrator", "alice": "alice", "bob": "bob"}
    refs = spec.voice_refs()
    assert {label: refs[label].sample for label in voiced} == {
        label: read_voice(samples[name], ffmpeg_exe()).sha256 for label, name in voiced.items()
    }
    store_ = CheckpointStore(home / "checkpoints")
    alone = CheckpointStore(home / "alone")
    differs: set[tuple[str, str]] = set()  # (the sentence's voice, another) where the other voice's take differs
    with Connection(Settings.from_env()) as conn:
        voices = {label: engine.voice(conn.redis, ref) for label, ref in refs.items()}
        for s in plan.sentences:
            got = store_.load(plan.keys[s.index])
            assert got is not None, s
            for label, voice in voices.items():
                pcm = np.concatenate([c.pcm for c in engine.synthesize([s], voice)])
                key = hashlib.sha256(f"{label}-{s.index}".encode()).hexdigest()
                alone.save(key, pcm, 0, False, 1)  # the same int16 conversion as the job's checkpoints
                same = np.array_equal(alone.load(key).pcm, got.pcm)
                if label == s.voice:
                    assert same, (s.index, s.voice)
                elif not same:
                    differs.add((s.voice, label))
    spoken = {s.voice for s in plan.sentences}
    assert differs == {(v, other) for v in spoken for other in voices if other != v}, differs


def test_bad_casts_are_one_line_and_enqueue_nothing(env, home, samples, external_redis):
    book = home / "markup.txt"
    book.write_text(MARKUP)
    base = ["submit", str(book), "--voice", str(samples["narrator"])]
    line = one_error_line(narrate(env, *base, "--voice", "alice=nobody-saved"))
    assert "cast voice 'alice'" in line and "no saved voice named 'nobody-saved'" in line
    (home / "cast.toml").write_text("[voices]\nalice = \n")
    assert "cast.toml is not valid TOML" in one_error_line(narrate(env, *base, "--cast", str(home / "cast.toml")))
    line = one_error_line(narrate(env, *base, "--voice", f"alice={samples['alice']}", "--strict"))
    assert "bob" in line and "name nobody" in line
    bad = home / "bad.jsonl"
    bad.write_text('{"speaker": "alice", "text": "Hi."}\nnot json\n')
    line = one_error_line(
        narrate(
            env,
            "submit",
            str(bad),
            "--voice",
            str(samples["narrator"]),
            "--voice",
            f"alice={samples['alice']}",
            "--markup",
            "jsonl",
        )
    )
    assert "line 2" in line
    assert not external_redis.keys("rq:job:*")
