"""The proof pass in a worker (jobs/task/proof_pass.py), with the fake engine and the fake recognizer
(worker/testkit/fake_recognizer.py): a flagged take is synthesized again with a new seed and the best take is
kept; a worker killed mid-proof resumes without hearing again what was already judged to the end."""

from __future__ import annotations

import json

from helpers.books import book
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job
from narrate.jobs.book.checkpoints import MAGIC, CheckpointStore
from narrate.jobs.proof.takes import retake_seed


def proof_env(env: dict, home, **extra: str) -> dict:
    """The fake engine (a tone a sentence, its loudness by seed) and recognizer; pace is not judged (the tones
    are far shorter than speech)."""
    return fake_env(
        env,
        home,
        delay_ms=10,
        NARRATE_FAKE_SEEDED="1",
        NARRATE_PROOF_RATE_FACTOR="1000",
        NARRATE_FAKE_PROOF_LOG=str(home / "heard.log"),
        **extra,
    )


def records(home) -> dict[str, tuple[dict, int]]:
    """Each checkpoint's proof record (as its header keeps it) and its loudest sample, by the sentence's words
    (its longest transcript)."""
    out = {}
    for path in (home / "checkpoints").glob("*/*.seg"):
        raw = path.read_bytes()
        header = json.loads(raw[len(MAGIC) : raw.index(b"\n", len(MAGIC))])
        cp = CheckpointStore(home / "checkpoints").load(path.stem)
        assert cp is not None and cp.proof == header.get("proof") and cp.proof
        words = max((t["verdict"]["transcript"] for t in cp.proof["takes"]), key=len)
        out[words] = (cp.proof, int(abs(cp.pcm.astype(int)).max()))
    return out


def heard(home) -> list[dict]:
    return [json.loads(line) for line in (home / "heard.log").read_text().splitlines()]


def level(seed: int) -> int:
    """The fake engine's loudest sample for a tone of this seed (NARRATE_FAKE_SEEDED)."""
    return round((0.1 + (seed % 97) / 970) * 32767)


def test_a_flagged_take_is_retaken_and_the_best_kept(env, home, voice_wav):
    e = proof_env(env, home, NARRATE_FAKE_PROOF_FLAW="number two =drop,repeat;number four =cut,tail,nothing")
    doc = home / "book.txt"
    doc.write_text(book(6))
    job_id = submit(e, doc, voice_wav, home / "out" / "book.wav", "--proof", "--retakes", "2")
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished", st
    proof = st["result"]["proof"]
    assert proof["model"] == "mlx-community/parakeet-tdt-0.6b-v2"  # auto, English: by language (the fake loads none)
    assert {k: proof[k] for k in ("checked", "flagged", "retaken", "still_flagged", "retakes")} == {
        "checked": 6,
        "flagged": 2,
        "retaken": 2,
        "still_flagged": 1,
        "retakes": 4,
    }
    assert proof["reasons"] == {"dropped": 1, "ending": 1}  # the cut take: the best of three bad ones
    by_text = records(home)
    two = next(v for k, v in by_text.items() if "number two" in k)
    four = next(v for k, v in by_text.items() if "number four" in k)
    record, peak = two
    seeds = [t["seed"] for t in record["takes"]]
    assert seeds == [seeds[0], retake_seed(seeds[0], 1), retake_seed(seeds[0], 2)]
    assert [t["verdict"]["reasons"] for t in record["takes"]] == [["dropped"], ["repeated"], []]
    assert record["kept"] == 2 and record["final"] and peak == level(seeds[2]) != level(seeds[0])  # the retake's audio
    record, peak = four
    assert len(record["takes"]) == 3 and record["kept"] == 0 and peak == level(record["takes"][0]["seed"])
    assert len(heard(home)) == 6 + 4  # every take heard once


def test_a_worker_killed_mid_proof_resumes_without_hearing_again_what_was_judged(env, home, voice_wav):
    """The recognizer kills the worker (os.abort) on a take of sentence 9; the supervisor starts another, which
    hears again only the takes of the batch in flight and the flagged sentence 3 waiting for its retake (heard,
    not judged to the end): no sentence whose proof was final."""
    e = proof_env(
        env,
        home,
        NARRATE_FAKE_PROOF_DELAY_MS="150",
        NARRATE_FAKE_SPOKEN=str(home / "spoken.jsonl"),
        NARRATE_FAKE_PROOF_ABORT_ON="number nine ",
        NARRATE_FAKE_PROOF_ABORT_ONCE=str(home / "aborted"),
        NARRATE_FAKE_PROOF_FLAW="number three =drop",
    )
    doc = home / "book.txt"
    doc.write_text(book(16))
    job_id = submit(e, doc, voice_wav, home / "out" / "book.wav", "--proof")
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished" and (home / "aborted").exists(), st
    proof = st["result"]["proof"]
    assert (proof["checked"], proof["flagged"], proof["retaken"], proof["still_flagged"]) == (16, 1, 1, 0)
    log = heard(home)
    pids = list(dict.fromkeys(h["pid"] for h in log))
    assert len(pids) == 2, pids  # the killed worker, then the one after it
    first = [h for h in log if h["pid"] == pids[0]]
    last_batch = {h["text"] for h in first if h["batch"] == first[-1]["batch"]}
    again = {h["text"] for h in log if h["pid"] == pids[1]} & {h["text"] for h in first}
    flagged = {h["text"] for h in first if "number three " in h["text"]}  # waiting for its retake when it died
    assert again and again <= last_batch | flagged  # only what was in flight or not final
    assert any("number nine " in t for t in again)
    assert len(records(home)) == 16  # every sentence's final record in its checkpoint
