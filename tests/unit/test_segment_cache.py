"""The segment cache a redo's stitch takes segments from (jobs/audio/reuse.py): records round-trip and a damaged
or foreign one is not followed; pruning keeps records newest first while their segments fit a quarter of the cap
(the newest job's always), then removes every segment no kept record names; a cap of 0 keeps nothing."""

from __future__ import annotations

import json
import os

from narrate.jobs.audio.reuse import Record, Reuse, SegmentCache, fingerprint
from narrate.jobs.audio.segments import Cuts
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence

SPEC = JobSpec(document="d", voice="a" * 64, output="b.m4b")


def _plan(n: int = 6) -> Plan:
    sentences = [Sentence(i, f"s{i}", i, 100) for i in range(n)]
    return Plan(
        sentences, frozenset({2, 5}), {0: "One", 3: "Two"}, [f"k{i}" for i in range(n)], [s.text for s in sentences]
    )


def _record(plan: Plan, keys: list[str], spec: JobSpec = SPEC) -> Record:
    n = len(plan.sentences)
    return Record(
        fingerprint(plan, spec),
        ["ab" * 32] * n,
        Cuts(frozenset({3}), {3: 3000, 5: 2500}),
        [1.5, 1.25],
        [1.5] * 3 + [1.25] * 3,
        keys,
    )


def test_a_record_round_trips_and_only_a_whole_one_of_the_same_book_is_followed(tmp_path):
    plan = _plan()
    cache = SegmentCache(tmp_path, 10**9)
    cache.save("narrate-old", _record(plan, []))
    assert cache.record("narrate-old") == _record(plan, [])
    assert Reuse.open(tmp_path.parent, 10**9, plan, SPEC, None).follow is None  # not a redo
    home = tmp_path.parent
    (home / "segments").mkdir(exist_ok=True)
    SegmentCache(home / "segments", 10**9).save("narrate-old", _record(plan, []))
    assert Reuse.open(home, 10**9, plan, SPEC, "narrate-old").follow == _record(plan, [])
    assert Reuse.open(home, 0, plan, SPEC, "narrate-old").cache is None  # a cap of 0: no cache at all
    other = JobSpec(document="d", voice="a" * 64, output="b.m4b", sentence_pause_ms=SPEC.sentence_pause_ms + 1)
    assert Reuse.open(home, 10**9, plan, other, "narrate-old").follow is None  # other pauses: other cuts
    assert Reuse.open(home, 10**9, _plan(7), SPEC, "narrate-old").follow is None  # other sentences
    path = home / "segments" / "books" / "narrate-old.json"
    for damage in ({"gains": [1.5]}, {"unit_gain": [None, 1.0]}, {"leads": [[9, 3000]]}, {"format": 0}):
        data = _record(plan, []).to_json()
        data.update(damage)
        path.write_text(json.dumps(data))
        assert Reuse.open(home, 10**9, plan, SPEC, "narrate-old").follow is None, damage
    path.write_text("{not json")
    assert Reuse.open(home, 10**9, plan, SPEC, "narrate-old").follow is None


def test_prune_keeps_the_newest_records_whose_segments_fit(tmp_path):
    plan = _plan()
    cache = SegmentCache(tmp_path / "segments", 4 * 3000)  # the segments' share: 3,000 bytes
    keys = [f"{k:064x}" for k in range(4)]

    def stitched(job: str, named: list[str], when: float | None = None) -> None:
        """A job's stitch: its segments kept as encoded, then its record (which prunes)."""
        for k in named:
            src = tmp_path / f"{k}.aac"
            src.write_bytes(b"\xff" * 1000)
            cache.keep(k, src)
        cache.save(job, _record(plan, named))
        if when is not None:
            os.utime(cache.root / "books" / f"{job}.json", (when, when))

    stitched("narrate-a", keys[:2], 1)
    stitched("narrate-b", keys[1:3], 2)  # 2,000 bytes, one segment shared with a's: both fit
    assert [cache.path(k).exists() for k in keys] == [True, True, True, False]
    stitched("narrate-c", keys[3:])  # the newest, 1,000 bytes: b's fit beside it, a's one more segment not
    assert cache.record("narrate-c") and cache.record("narrate-b") and cache.record("narrate-a") is None
    assert [cache.path(k).exists() for k in keys] == [False, True, True, True]  # a's own segment went with it
    big = SegmentCache(cache.root, 4 * 500)
    big.save("narrate-d", _record(plan, keys[1:]))  # the newest is kept whatever its size, and only it
    assert [cache.path(k).exists() for k in keys] == [False, True, True, True]
    assert sorted(p.stem for p in (cache.root / "books").iterdir()) == ["narrate-d"]
    stray = cache.root / "ab" / ".x.tmp"
    stray.parent.mkdir()
    stray.write_bytes(b"x")
    cache.prune()
    assert not stray.parent.exists()  # a temp file a killed writer left, and its empty shard
    nothing = SegmentCache(tmp_path / "none", 0)
    nothing.save("narrate-e", _record(plan, []))
    nothing.keep(keys[0], tmp_path / f"{keys[0]}.aac")
    assert not (tmp_path / "none").exists()
