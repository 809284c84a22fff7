"""Word timings (`--word-timings`, jobs/task/word_timings.py) end to end.

With the fake engine and the fake aligner (worker/testkit/fake_aligner.py): the EPUB's overlays go word by word
(EPUBCheck clean, each word's clip inside its sentence's, in order), a word-level WebVTT lies beside the book, a
sentence the aligner gives nothing usable for is read along sentence by sentence and the worker's log says so, the
words are kept in the checkpoints (another job reading the same sentences aligns none), and a worker killed while
aligning resumes without aligning again what it had aligned.

With the real engine and mlx-audio's real Qwen3-ForcedAligner code (tiny random-weight checkpoints: the timings
are meaningless, the plumbing is real): `narrate run --readalong epub --word-timings DIR` finishes, its EPUB passes
EPUBCheck with word-level pars whose clips are in order and inside their sentence's, and the word VTT is written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.books import book
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job
from helpers.readalong import EPUBCHECK_MISSING, epubcheck, epubcheck_command, overlays, word_sequences
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.settings import default

needs_epubcheck = pytest.mark.skipif(epubcheck_command() is None, reason=EPUBCHECK_MISSING)
MS = 0.0015  # clip times are written to the millisecond
STAMP = re.compile(r"<(\d\d):(\d\d):(\d\d)\.(\d\d\d)>")
DOC = """# The Keeper

The keeper climbed the stairs slowly. The lamp was cold and dark.

The sea was loud that night. He lit the wick at once.
"""


def words_env(env: dict, home: Path, **extra: str) -> dict:
    return fake_env(env, home, delay_ms=10, NARRATE_FAKE_ALIGN_LOG=str(home / "aligned.log"), **extra)


def aligned(home: Path) -> list[dict]:
    log = home / "aligned.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def timing(path: Path) -> dict[int, tuple[float, float]]:
    """Each sentence's (start, end) in the timing manifest (`--subtitles json`)."""
    return {s["index"]: (s["start"], s["end"]) for s in json.loads(path.read_text())["sentences"]}


def check_words(epub: Path, sentences: dict[int, tuple[float, float]]) -> dict[int, list[tuple[str, float, float]]]:
    """Every word-level sentence's pars: its words' spans in order, clips one after the other (each at least a
    millisecond), the first from the sentence's start, the last to its end. Returns them by sentence index."""
    out = {}
    for sentence, pars in word_sequences(epub).items():
        index = int(sentence.removeprefix("nr-s"))
        start, end = sentences[index]
        assert pars, sentence
        assert abs(pars[0][1] - start) <= MS and abs(pars[-1][2] - end) <= MS, (sentence, pars, start, end)
        for (word, a, b), nxt in zip(pars, [*pars[1:], None], strict=True):
            assert word.startswith(f"{sentence}-w") and start - MS <= a < b <= end + MS, (sentence, pars)
            if nxt is not None:
                assert abs(nxt[1] - b) <= MS, (sentence, pars)  # no audio of the sentence skipped
        out[index] = pars
    return out


def vtt_cues(text: str) -> list[str]:
    assert text.startswith("WEBVTT\n")
    return [block.split("\n", 1)[1] for block in text.strip().split("\n\n")[1:]]


@needs_epubcheck
def test_a_book_is_read_along_word_by_word_and_its_words_are_kept(env, home, voice_wav):
    e = words_env(env, home, NARRATE_FAKE_ALIGN_FLAW="sea was loud=nothing")
    doc = home / "keeper.md"
    doc.write_text(DOC)
    out = home / "out" / "keeper.m4b"
    job_id = submit(e, doc, voice_wav, out, "--readalong", "epub", "--subtitles", "json", "--word-timings")
    worker = narrate(e, "worker", "--burst")
    assert worker.returncode == 0, worker.stderr[-2000:]
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    said = st["result"]["word_timings"]
    assert said["model"] == default("align_model") and said["aligned"] == 5  # the title, four sentences
    assert (said["sentences"], said["sentence_level"], said["sentence_level_indices"]) == (4, 1, [3])
    assert re.search(
        r"word timings: 1 of 5 sentences are read along sentence by sentence .*: sentence 4 \(no words\)", worker.stderr
    ), worker.stderr[-2000:]
    epub = home / "out" / "keeper.epub"
    errors, _, report = epubcheck(epub)
    assert errors == 0, report
    times = timing(home / "out" / "keeper.json")
    pars = check_words(epub, times)
    assert sorted(pars) == [0, 1, 2, 4]
    assert [len(p) for i, p in sorted(pars.items())] == [2, 6, 6, 6]  # "The Keeper", then each sentence's words
    assert "nr-s3" in overlays(epub)  # the sentence the aligner gave nothing for: one par
    cues = vtt_cues((home / "out" / "keeper.words.vtt").read_text())
    assert len(cues) == 5 and not STAMP.search(cues[3]) and cues[3] == "The sea was loud that night."
    assert STAMP.sub("", cues[1]) == "The keeper climbed the stairs slowly."
    assert len(STAMP.findall(cues[1])) == 5  # each word's but the first's (at the cue's start)
    store = CheckpointStore(home / "checkpoints")
    headers = [store.header(p.stem) for p in (home / "checkpoints").glob("*/*.seg")]
    assert len(headers) == 5 and all(h and h["words"]["model"] == default("align_model") for h in headers)
    assert sorted(len(h["words"]["words"]) for h in headers if h) == [0, 2, 6, 6, 6]

    # Another job reading the same sentences (another output): their words come from the checkpoints.
    again = submit(e, doc, voice_wav, home / "out" / "again.m4a", "--readalong", "epub", "--word-timings")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(again)
    assert st["status"] == "finished" and st["result"]["word_timings"]["aligned"] == 0, st
    assert st["result"]["word_timings"]["sentences"] == 4 and len(aligned(home)) == 5
    assert sorted(word_sequences(home / "out" / "again.epub")) == ["nr-s0", "nr-s1", "nr-s2", "nr-s4"]


def test_a_worker_killed_while_aligning_resumes_without_aligning_again_what_it_had(env, home, voice_wav):
    """The aligner kills the worker (os.abort) on sentence 9's take; the worker after it aligns again only the
    takes of the call in flight, and whatever had not been aligned yet."""
    e = words_env(
        env, home, NARRATE_FAKE_ALIGN_ABORT_ON="number nine ", NARRATE_FAKE_ALIGN_ABORT_ONCE=str(home / "aborted")
    )
    doc = home / "book.txt"
    doc.write_text(book(16))
    job_id = submit(e, doc, voice_wav, home / "out" / "book.wav", "--word-timings")
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished" and (home / "aborted").exists(), st
    log = aligned(home)
    pids = list(dict.fromkeys(a["pid"] for a in log))
    assert len(pids) == 2, pids
    first = [a for a in log if a["pid"] == pids[0]]
    in_flight = {a["text"] for a in first if a["batch"] == first[-1]["batch"]}
    again = {a["text"] for a in log if a["pid"] == pids[1]} & {a["text"] for a in first}
    assert again and again <= in_flight and any("number nine " in t for t in again)
    assert len({a["text"] for a in log}) == 16 and st["result"]["word_timings"]["sentences"] == 16
    store = CheckpointStore(home / "checkpoints")
    assert all(store.header(p.stem)["words"]["words"] for p in (home / "checkpoints").glob("*/*.seg"))


def test_the_tiny_aligner_loads_through_mlx_audios_loader_and_aligns(aligner_checkpoint, asr_checkpoint, monkeypatch):
    import mlx_audio.stt.utils as stt_utils
    import numpy as np
    from narrate.worker.engine.aligner import MlxAligner
    from narrate.worker.engine.recognizer import RecognizerUnavailable

    config = json.loads((aligner_checkpoint / "config.json").read_text())
    assert config["model_type"] == "qwen3_asr" and config["thinker_config"]["model_type"] == "qwen3_forced_aligner"
    calls = []
    real = stt_utils.base_load_model

    def spy(*args, **kwargs):
        calls.append((str(kwargs.get("model_path", args[0] if args else "")), kwargs.get("category")))
        return real(*args, **kwargs)

    monkeypatch.setattr(stt_utils, "base_load_model", spy)
    aligner = MlxAligner.load(str(aligner_checkpoint))
    assert calls == [(str(aligner_checkpoint.resolve()), "stt")] and aligner.source == str(aligner_checkpoint)
    rng = np.random.default_rng(0)
    takes = [(0.1 * rng.standard_normal(int(24_000 * s))).astype(np.float32) for s in (0.48, 0.6, 0.05)]
    texts = ["Hello, big world!", "It's 42 o'clock.", "Too short."]
    got = aligner.align(takes, texts=texts, languages=["english", "auto", "english"])
    assert [[w for w, _, _ in words] for words in got] == [["Hello", "big", "world"], ["It's", "42", "o'clock"], []]
    assert all(0 <= a <= b <= 0.4 for words in got for _, a, b in words)  # the tiny head's 6 classes of 80 ms
    with pytest.raises(RecognizerUnavailable, match="is not a forced aligner"):
        MlxAligner.load(str(asr_checkpoint))


@needs_epubcheck
def test_the_real_aligner_gives_a_book_word_level_overlays(env, home, voice_wav, aligner_checkpoint):
    """`narrate run` with the tiny Qwen3-TTS and Qwen3-ForcedAligner checkpoints through mlx-audio's own loader and
    model code. Random weights put some sentences' words all at one instant: those are read along sentence by
    sentence (the log says so); the others word by word."""
    doc = home / "keeper.md"
    doc.write_text(DOC)
    out = home / "out" / "keeper.m4b"
    proc = narrate(
        env,
        "run",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(out),
        "--json",
        "--readalong",
        "epub",
        "--subtitles",
        "json",
        "--word-timings",
        str(aligner_checkpoint),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = json.loads(proc.stdout)["result"]["word_timings"]
    assert said["model"] == str(aligner_checkpoint) and said["aligned"] == 5 and said["sentences"] >= 1, said
    if said["sentence_level"]:
        assert "read along sentence by sentence" in proc.stderr
    epub = home / "out" / "keeper.epub"
    errors, _, report = epubcheck(epub)
    assert errors == 0, report
    pars = check_words(epub, timing(home / "out" / "keeper.json"))
    assert len(pars) == said["sentences"] and any(len(p) > 1 for p in pars.values()), pars
    cues = vtt_cues((home / "out" / "keeper.words.vtt").read_text())
    assert len(cues) == 5 and any(STAMP.search(c) for c in cues)
