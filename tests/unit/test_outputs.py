"""Output paths are confined to the output root on the client and again on the worker."""

import os

import pytest
from narrate.jobs.errors import BadInput
from narrate.jobs.outputs.outputs import output_path, relative_output


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


def test_symlink_inside_the_root_is_resolved_on_the_client_and_refused_on_the_worker(tmp_path):
    """The client stores the real path; the worker never follows a link below its root."""
    (tmp_path / "real").mkdir()
    (tmp_path / "latest").symlink_to(tmp_path / "real")
    assert relative_output(tmp_path, tmp_path / "latest" / "x.mp3") == "real/x.mp3"
    with pytest.raises(BadInput, match="through a symlink"):
        output_path(tmp_path, "latest/x.mp3")


def test_output_that_is_not_a_regular_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.mp3")
    with pytest.raises(BadInput, match="not a regular file"):
        relative_output(tmp_path, tmp_path / "pipe.mp3")
    (tmp_path / "dir.mp3").mkdir()
    with pytest.raises(BadInput, match="is a directory"):
        relative_output(tmp_path, tmp_path / "dir.mp3")
    with pytest.raises(BadInput, match="is a directory"):
        output_path(tmp_path, "dir.mp3")


def test_names_and_paths_too_long_are_refused_on_client_and_worker(tmp_path):
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    fits = "n" * (name_max - 4) + ".mp3"
    assert relative_output(tmp_path, tmp_path / fits) == fits
    assert output_path(tmp_path, fits).name == fits
    for bad in ("n" * (name_max - 3) + ".mp3", "d" * (name_max + 1) + "/x.mp3"):
        with pytest.raises(BadInput, match="name is too long"):
            relative_output(tmp_path, tmp_path / bad)
        with pytest.raises(BadInput, match="name is too long"):
            output_path(tmp_path, bad)
    deep = "/".join(["d" * 200] * (os.pathconf(tmp_path, "PC_PATH_MAX") // 200 + 1)) + "/x.mp3"
    with pytest.raises(BadInput, match="path is too long"):
        relative_output(tmp_path, tmp_path / deep)
    with pytest.raises(BadInput, match="path is too long"):
        output_path(tmp_path, deep)


def test_checkpoints_are_complete_or_absent(tmp_path):
    import numpy as np
    from narrate.jobs.book.checkpoints import CheckpointStore

    store = CheckpointStore(tmp_path)
    store.save("ab" * 32, np.linspace(-1, 1, 1920, dtype=np.float32), frames=1, runaway=False, takes=1)
    assert store.has("ab" * 32) and store.load("ab" * 32).pcm.size == 1920
    path = store.path("ab" * 32)
    path.write_bytes(path.read_bytes()[:-2])  # a truncated checkpoint is not trusted
    assert not store.has("ab" * 32) and store.load("ab" * 32) is None
    assert not store.has("cd" * 32)
