"""The checkpoint store removes a shard folder once it is empty, without breaking a writer that is
creating a file in it at that moment."""

from __future__ import annotations

import tempfile
import threading
import time

import numpy as np
from narrate.jobs.book.checkpoints import CheckpointStore

PCM = np.zeros(240, dtype=np.float32)


def test_discard_removes_a_shard_folder_once_it_is_empty(tmp_path):
    store = CheckpointStore(tmp_path)
    a1, a2, b = "aa" + "1" * 62, "aa" + "2" * 62, "bb" + "3" * 62
    for key in (a1, a2, b):
        store.save(key, PCM, frames=1, runaway=False, takes=1)
    store.discard([a1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aa", "bb"]  # aa still holds a2
    store.discard([a2, b, "cc" + "4" * 62])  # a key never saved: harmless
    assert list(tmp_path.iterdir()) == []
    store.save(a1, PCM, frames=1, runaway=False, takes=1)  # and the folder comes back when needed
    assert store.verify(a1)


def test_sweep_removes_empty_shard_folders_left_by_older_versions(tmp_path):
    store = CheckpointStore(tmp_path)
    (tmp_path / "ab").mkdir()
    key = "cd" + "0" * 62
    store.save(key, PCM, frames=1, runaway=False, takes=1)
    (tmp_path / "cd" / ".cd000.x.tmp").write_bytes(b"half")
    store.sweep_temp()
    assert [p.name for p in tmp_path.iterdir()] == ["cd"] and store.verify(key)


def test_a_writer_recreates_a_shard_folder_removed_between_its_mkdir_and_its_temp_file(tmp_path, monkeypatch):
    """The race: the writer made the folder; a discard of the folder's last checkpoint removes it
    (now empty) before the writer creates its temp file there."""
    store = CheckpointStore(tmp_path)
    key = "ee" + "5" * 62
    real_mkstemp = tempfile.mkstemp
    removed = []

    def after_a_concurrent_discard(*args, **kwargs):
        if not removed:
            removed.append(kwargs["dir"])
            store.discard(["ee" + "6" * 62])  # the other checkpoint of the shard: the folder goes
        return real_mkstemp(*args, **kwargs)

    store.save("ee" + "6" * 62, PCM, frames=1, runaway=False, takes=1)
    monkeypatch.setattr(tempfile, "mkstemp", after_a_concurrent_discard)
    store.save(key, PCM, frames=2, runaway=False, takes=1)
    assert removed and store.verify(key) and store.load(key).frames == 2


def test_writers_and_discards_on_one_shard_at_once(tmp_path):
    """Threads saving and discarding in the same shard folder for a while: every save lands."""
    store = CheckpointStore(tmp_path)
    errors: list[BaseException] = []
    stop = time.monotonic() + 1.0

    def churn(tag: str) -> None:
        i = 0
        try:
            while time.monotonic() < stop:
                key = f"ff{tag}{i:061d}"
                store.save(key, PCM, frames=1, runaway=False, takes=1)
                assert store.verify(key)
                store.discard([key])
                i += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=churn, args=(t,)) for t in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert list(tmp_path.iterdir()) == []
