"""A local checkpoint is identified by its content: a fine-tune with the same layout and file sizes
gets its own key (so its own voice embeddings and sentence checkpoints), the hashes are
remembered by file identity, and a hub model's key names the snapshot revision that was loaded."""

from __future__ import annotations

import os
import shutil

import mlx.core as mx
import pytest
from narrate.jobs.audio.samples import read_voice
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.server import store
from narrate.worker.engine import model_key, voice_cache
from narrate.worker.engine.models import ModelCache, load, resolve
from narrate.worker.testkit.random_checkpoint import write_checkpoint


@pytest.fixture(scope="module")
def twin(checkpoint, tmp_path_factory):
    """The tiny checkpoint with other weights of the same shapes: config.json, tokenizer and every
    file size identical, only the bytes of the weights differ."""
    other = write_checkpoint(tmp_path_factory.mktemp("seed1") / "ckpt", size="tiny", seed=1)
    twin = tmp_path_factory.mktemp("twin") / "ckpt"
    shutil.copytree(checkpoint, twin)
    shutil.copyfile(other / "model.safetensors", twin / "model.safetensors")
    assert (twin / "model.safetensors").stat().st_size == (checkpoint / "model.safetensors").stat().st_size
    assert (twin / "model.safetensors").read_bytes() != (checkpoint / "model.safetensors").read_bytes()
    return twin


def test_same_layout_other_weights_get_their_own_key_and_embedding(checkpoint, twin, voice_wav, external_redis):
    a = load(resolve(str(checkpoint), None))
    b = load(resolve(str(twin), None))
    assert a.key != b.key
    voice = read_voice(voice_wav, ffmpeg_exe())
    store.put_voice(external_redis, voice.sha256, voice.wav, 3600)
    emb_a, hit_a = voice_cache.voice_embedding(external_redis, a, voice.sha256)
    emb_b, hit_b = voice_cache.voice_embedding(external_redis, b, voice.sha256)
    assert not hit_a and not hit_b  # the twin's embedding is computed with its own speaker encoder
    assert not mx.array_equal(emb_a, emb_b)


def counting(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = model_key.file_sha256

    def counted(path):
        seen.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(model_key, "file_sha256", counted)
    return seen


def test_hashes_are_remembered_until_a_file_changes(checkpoint, tmp_path, monkeypatch):
    memo = tmp_path / "weights-hashes.json"
    hashed = counting(monkeypatch)
    first = ModelCache(hashes=memo).get(str(checkpoint), None).key
    assert "model.safetensors" in hashed and memo.exists()
    hashed.clear()
    assert ModelCache(hashes=memo).get(str(checkpoint), None).key == first  # a new process: no rehash
    assert hashed == []
    st = (checkpoint / "config.json").stat()
    os.utime(checkpoint / "config.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert ModelCache(hashes=memo).get(str(checkpoint), None).key == first  # same bytes, same key
    assert hashed == ["config.json"]  # only the touched file was hashed again


def test_hub_key_names_the_cached_snapshot_revision(tmp_path):
    repo = tmp_path / "models--someone--voice-model"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    resolved = resolve("someone/voice-model", "bf16", metal=False)
    assert model_key.model_key(resolved, hub_cache=tmp_path) == f"someone/voice-model@{commit}"
    other = resolve("someone/not-downloaded", "bf16", metal=False)
    assert model_key.model_key(other, hub_cache=tmp_path) == "someone/not-downloaded"


def test_a_warm_model_whose_files_changed_is_loaded_again(checkpoint, twin, tmp_path):
    local = tmp_path / "ckpt"
    shutil.copytree(checkpoint, local)
    cache = ModelCache(hashes=tmp_path / "weights-hashes.json")
    first = cache.get(str(local), None)
    assert cache.get(str(local), None) is first  # unchanged: stays warm
    shutil.copyfile(twin / "model.safetensors", local / "model.safetensors")  # replaced in place
    second = cache.get(str(local), None)
    assert second is not first and second.key != first.key and len(cache) == 1
