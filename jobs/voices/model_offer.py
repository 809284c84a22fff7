"""What a model offers, as far as the submitting host can tell without loading it (no mlx here):
its kind (Base clones samples, CustomVoice speaks preset speakers, VoiceDesign makes a voice from
a description), its speakers, and whether it follows ``--instruct``.

Read from the model's ``config.json`` when this host has it: a local checkpoint, or a hub model in
this host's Hugging Face cache (any quantization of it: they share the speakers). Otherwise the
kind comes from the id's name (``...-Base``, ``...-CustomVoice``, ``...-VoiceDesign``) and the
speakers are unknown here: the worker checks them at its first batch and fails the job with the
same message. ``None`` (no ``--model``) means the worker's NARRATE_MODEL: nothing is known here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.errors import BadInput

KINDS = ("base", "custom_voice", "voice_design")
KIND_NAMES = {"base": "Base", "custom_voice": "CustomVoice", "voice_design": "VoiceDesign"}
_NAMED_KIND = re.compile(r"-(Base|CustomVoice|VoiceDesign)(?:-(?:bf16|4bit|6bit|8bit))?$", re.IGNORECASE)
_QUANT = re.compile(r"-(bf16|4bit|6bit|8bit)$")
# Qwen3-TTS's CustomVoice speakers (its model card); only ryan and aiden are English.
QWEN_PRESETS = ("aiden", "dylan", "eric", "ono_anna", "ryan", "serena", "sohee", "uncle_fu", "vivian")
DEFAULT_CUSTOM_VOICE = "mlx-community/Qwen3-TTS-12Hz-1.7B-CustomVoice"
DEFAULT_VOICE_DESIGN = "mlx-community/Qwen3-TTS-12Hz-1.7B-VoiceDesign"


@dataclass(frozen=True)
class ModelFacts:
    kind: str  # base | custom_voice | voice_design
    speakers: tuple[str, ...] | None  # lower case; None: not known on this host
    follows_instruct: bool  # 0.6B models drop --instruct
    source: str  # "config" (its config.json was read) or "name" (its id says the kind)

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]


def facts(model: str | None) -> ModelFacts | None:
    """What this host can tell of `model` (a hub id or an absolute checkpoint path), or None."""
    if model is None:
        return None
    for config in _configs(model):
        found = _from_config(config)
        if found is not None:
            return found
    m = _NAMED_KIND.search(model)
    if m is None:
        return None
    kind = {"base": "base", "customvoice": "custom_voice", "voicedesign": "voice_design"}[m.group(1).lower()]
    return ModelFacts(kind, None, "0.6B" not in model, "name")


def _configs(model: str) -> list[Path]:
    path = Path(model)
    if path.is_absolute():
        return [path / "config.json"] if (path / "config.json").is_file() else []
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - it comes with mlx-audio
        return []
    org, _, name = model.partition("/")
    base = _QUANT.sub("", name)
    ids = [model]
    if org in ("Qwen", "mlx-community"):
        ids += [f"mlx-community/{base}-{q}" for q in ("bf16", "8bit", "6bit", "4bit")] + [f"Qwen/{base}"]
    found = []
    for repo in dict.fromkeys(ids):
        try:
            hit = try_to_load_from_cache(repo, "config.json")
        except Exception:  # noqa: BLE001 - an odd cache or id: nothing known from it
            continue
        if isinstance(hit, str):
            found.append(Path(hit))
    return found


def _from_config(path: Path) -> ModelFacts | None:
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or config.get("tts_model_type") not in KINDS:
        return None
    spk = (config.get("talker_config") or {}).get("spk_id") or {}
    speakers = tuple(sorted(str(s).lower() for s in spk)) if isinstance(spk, dict) else ()
    return ModelFacts(config["tts_model_type"], speakers, config.get("tts_model_size") != "0b6", "config")


def unknown_speaker(model: str, speaker: str, speakers: tuple[str, ...]) -> BadInput:
    """The one line for a speaker the model does not have (the worker says the same)."""
    return BadInput(f"model {model} has no speaker {speaker!r}; its speakers: {', '.join(speakers) or 'none'}")
