"""The random-weight checkpoints ``narrate bench`` runs on when it is given none (``--random``), and
the CustomVoice twin of a checkpoint for ``--voice-kind preset``: written once under NARRATE_HOME
and reused."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.server.localstate import private_dir

# A checkpoint's size for its random-weight CustomVoice twin, by config.json's tts_model_size.
SIZE_OF_MODEL_SIZE = {"0b6": "0.6b", "1b7": "1.7b", "tiny": "tiny"}


def _complete(checkpoint: Path) -> bool:
    return all((checkpoint / name).is_file() for name in ("model.safetensors", "speech_tokenizer/model.safetensors"))


def random_checkpoint(home: Path, size: str, log: Callable[[str], None] = print, kind: str = "base") -> Path:
    """A random-weight checkpoint of `size` and `kind` (base, custom-voice) under `home`, written
    once and reused. It is written into a hidden temp folder and renamed into place: an interrupted
    run leaves no half checkpoint."""
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    name = f"bench-checkpoint-{size}" + ("" if kind == "base" else f"-{kind}")
    path = home / name
    if _complete(path):
        return path
    private_dir(home, "NARRATE_HOME")
    shutil.rmtree(path, ignore_errors=True)  # what an interrupted older version left
    log(f"writing a random-weight {size} {'' if kind == 'base' else kind + ' '}checkpoint to {path}")
    tmp = home / f".{name}.{os.getpid()}"  # named, so `finally` finds it even if interrupted early
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700)
        write_checkpoint(tmp, size=size, kind=kind)
        try:
            tmp.rename(path)
        except OSError:
            if not _complete(path):  # not a concurrent bench that got there first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def preset_checkpoint(home: Path, checkpoint: Path, log: Callable[[str], None] = print) -> Path:
    """`--voice-kind preset`'s CustomVoice checkpoint: a random-weight one of `checkpoint`'s size."""
    try:
        config = json.loads((checkpoint / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"--voice-kind preset: cannot read {checkpoint / 'config.json'} ({e})") from None
    size = config.get("random_weights_checkpoint", {}).get("size") or SIZE_OF_MODEL_SIZE.get(
        config.get("tts_model_size")
    )
    if size is None:
        raise BadInput(f"--voice-kind preset: {checkpoint} is of no size narrate has a CustomVoice twin for")
    return random_checkpoint(home, size, log, kind="custom-voice")
