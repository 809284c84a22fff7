"""Output paths are confined to the output root on the client and again on the worker."""

import pytest
from narrate.jobs.errors import BadInput
from narrate.jobs.outputs import output_path, relative_output


def test_relative_output_inside_root(tmp_path):
    assert relative_output(tmp_path, tmp_path / "a" / "b.mp3") == "a/b.mp3"


def test_symlink_escape_is_refused_on_client_and_worker(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    with pytest.raises(BadInput, match="outside the output root"):
        relative_output(root, root / "link" / "x.mp3")
    with pytest.raises(BadInput, match="through a symlink"):
        output_path(root, "link/x.mp3")


@pytest.mark.parametrize("rel", ["../x.mp3", "/etc/x.mp3", "a/../../x.mp3", ""])
def test_worker_refuses_paths_that_leave_the_root(tmp_path, rel):
    with pytest.raises(BadInput):
        output_path(tmp_path, rel)


def test_worker_accepts_a_plain_relative_path(tmp_path):
    assert output_path(tmp_path, "dir/x.flac") == tmp_path.resolve() / "dir" / "x.flac"


def test_checkpoints_are_complete_or_absent(tmp_path):
    import numpy as np
    from narrate.jobs.checkpoints import CheckpointStore

    store = CheckpointStore(tmp_path)
    store.save("ab" * 32, np.linspace(-1, 1, 1920, dtype=np.float32), frames=1, runaway=False, attempts=1)
    assert store.has("ab" * 32) and store.load("ab" * 32).pcm.size == 1920
    path = store.path("ab" * 32)
    path.write_bytes(path.read_bytes()[:-2])  # a truncated checkpoint is not trusted
    assert not store.has("ab" * 32) and store.load("ab" * 32) is None
    assert not store.has("cd" * 32)
