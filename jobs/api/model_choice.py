"""What `--model` names, checked where the job is submitted (no mlx here): a Hugging Face id
(org/name), downloaded by the worker, or a local checkpoint directory.

A local path that this host can see is missing, or is not a checkpoint directory (no
config.json), is refused before anything is enqueued. A relative path is made absolute here:
the worker runs in a directory of its own. A checkpoint only the worker hosts have belongs in
their NARRATE_MODEL, not in a job.

The HTTP API (jobs/web/choices.py) takes fewer: the server's own NARRATE_MODEL, DEFAULT_MODELS and
the published Qwen3-TTS ids (`is_published`); never a path (the server's folder is not the worker's).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.settings import DEFAULT_MODEL
from narrate.jobs.voices.model_offer import DEFAULT_CUSTOM_VOICE, DEFAULT_VOICE_DESIGN

HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
# The models narrate's code names (the default of each kind), and the published Qwen3-TTS ids (Qwen's,
# and mlx-community's conversions: any size, kind and quantization): what a caller of the HTTP API may
# choose besides the server's own NARRATE_MODEL.
DEFAULT_MODELS = (DEFAULT_MODEL, DEFAULT_CUSTOM_VOICE, DEFAULT_VOICE_DESIGN)
QWEN3_TTS_ID = re.compile(
    r"^(?:Qwen|mlx-community)/Qwen3-TTS-12Hz-(?:0\.6B|1\.7B)-(?:Base|CustomVoice|VoiceDesign)(?:-(?:bf16|4bit|6bit|8bit))?$"
)
# How to try narrate without the hub: a random-weight checkpoint (the audio is noise).
DRY_RUN = "python -m narrate.worker.testkit.random_checkpoint DIR --size tiny"
RANDOM_WEIGHTS = f"try narrate on random weights ({DRY_RUN}, then --model DIR)"
CHOOSE = f"give --model a checkpoint directory (with config.json) or a Hugging Face id (org/name), or {RANDOM_WEIGHTS}"
# A model id's kind, as the published ids spell it, and the random checkpoint of that kind (--kind).
_ID_KIND = re.compile(r"-(CustomVoice|VoiceDesign)(?=-|$)", re.IGNORECASE)
KIND_FLAGS = {"customvoice": "custom-voice", "voicedesign": "voice-design"}


def random_weights(model: str | None = None) -> str:
    """RANDOM_WEIGHTS for a job of `model`: a random checkpoint of the same kind (a VoiceDesign id:
    `--kind voice-design`, a CustomVoice id: `--kind custom-voice`; a Base one needs no --kind)."""
    found = _ID_KIND.search(model or "")
    if found is None:
        return RANDOM_WEIGHTS
    return f"try narrate on random weights ({DRY_RUN} --kind {KIND_FLAGS[found.group(1).lower()]}, then --model DIR)"


def is_hub_id(model: str) -> bool:
    return bool(HUB_ID.match(model)) and not model.startswith((".", "~")) and not os.path.lexists(model)


def is_published(model: str) -> bool:
    """`model` is a published Qwen3-TTS id (QWEN3_TTS_ID), not a path on this host."""
    return bool(QWEN3_TTS_ID.match(model)) and is_hub_id(model)


def check_model(model: str | None) -> str | None:
    """The model as the job will carry it: a hub id unchanged, a local checkpoint as an absolute
    path. Raises BadInput for a path that is missing here or is not a checkpoint directory."""
    if model is None or is_hub_id(model):
        return model
    path = Path(model).expanduser()
    full = os.path.abspath(path)
    shown = model if full == model else f"{model} ({full})"
    if not path.exists():
        not_id = "" if path.is_absolute() or model.startswith((".", "~")) else " and is not a Hugging Face id"
        raise BadInput(f"model {shown} does not exist on this host{not_id}; {CHOOSE}")
    if not path.is_dir():
        raise BadInput(f"model {shown} is not a directory; {CHOOSE}")
    if not (path / "config.json").is_file():
        raise BadInput(f"model {shown} has no config.json: it is not a checkpoint directory; {CHOOSE}")
    return full
