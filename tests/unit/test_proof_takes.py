"""A sentence's takes under the proof pass (jobs/proof/takes.py) and their record in its checkpoint
(jobs/book/checkpoints.py ``record_proof``): the best take kept, a final record read back, counts, norms."""

from __future__ import annotations

import numpy as np
from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore, int16
from narrate.jobs.proof.takes import Counts, Norms, Record, Take, final_record, retake_seed
from narrate.jobs.proof.verdict import judge

SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."
KEY = "ab" * 32


def take(heard: str, seed: int = 7) -> Take:
    return Take(seed, judge(SENTENCE, heard, None))


def test_the_best_take_is_kept_and_the_record_reads_back():
    r = Record(
        "org/asr",
        [
            take("the quick brown fox jumps over the", 1),
            take(SENTENCE + " la la la", 2),
            take("the quick fox jumps over the lazy dog near the river bank", 3),
        ],
    )
    assert r.best() == 2  # one reason (dropped) against two and two
    r.kept, r.final = r.best(), True
    back = final_record(r.to_json(), "org/asr")
    assert back == r and back.verdict.dropped == ("brown",)
    assert final_record(r.to_json(), "org/other") is None  # another recognizer's verdicts are heard again
    assert final_record({**r.to_json(), "final": False}, "org/asr") is None
    assert final_record({"model": "org/asr", "final": True, "takes": "bad"}, "org/asr") is None
    assert final_record(None, "org/asr") is None


def test_retake_seeds_differ_and_stay_31_bit():
    seeds = [retake_seed(2**31 - 5, n) for n in range(4)]
    assert seeds[0] == 2**31 - 5 and len(set(seeds)) == 4 and all(0 <= s < 2**31 for s in seeds)


def test_counts_and_the_voices_norm():
    flagged_then_ok = Record(
        "m", [take("the quick fox jumps over the lazy dog near the river bank"), take(SENTENCE)], kept=1, final=True
    )
    still = Record("m", [take("the quick brown fox"), take("the quick brown fox jumps")], kept=1, final=True)
    ok = Record("m", [take(SENTENCE)], final=True)
    c = Counts.of([flagged_then_ok, still, ok])
    assert (c.checked, c.flagged, c.retaken, c.still_flagged, c.retakes) == (3, 2, 2, 1, 2)
    assert c.reasons == {"dropped": 1, "ending": 1, "wer": 1} and c.to_json()["checked"] == 3
    norms = Norms()
    pcm = (0.1 * np.random.default_rng(0).standard_normal(24_000 * 4)).astype(np.float32)
    for _ in range(4):
        norms.add("narrator", judge(SENTENCE, SENTENCE, pcm))
    assert norms.norm("narrator") is None  # not yet its own: the verdict's default
    norms.add("narrator", judge(SENTENCE, SENTENCE, pcm))
    assert norms.norm("narrator") == 13 / 4 and norms.norm("alice") is None


def test_the_record_goes_into_the_checkpoint_header_with_the_kept_takes_audio(tmp_path):
    store = CheckpointStore(tmp_path)
    first = np.full(4800, 0.1, np.float32)
    store.save(KEY, first, frames=2, runaway=False, takes=1)
    assert store.load(KEY).proof is None and store.header(KEY).get("proof") is None
    record = Record("m", [take(SENTENCE)], final=True).to_json()
    assert store.record_proof(KEY, record)
    cp = store.load(KEY)
    assert cp.proof == record and store.header(KEY)["proof"] == record and np.array_equal(cp.pcm, int16(first))
    retake = Checkpoint(int16(np.full(7200, 0.2, np.float32)), 3, False, 1)
    store.record_proof(KEY, record, retake)
    cp = store.load(KEY)
    assert cp.pcm.size == 7200 and cp.frames == 3 and cp.proof == record and store.verify(KEY)
    assert not store.record_proof("cd" * 32, record)  # gone: nothing written
    assert not store.has("cd" * 32)
