"""What a request of the HTTP API names, checked: a model (`model`: OpenAI's names, GET /v1/models,
or a published Qwen3-TTS id; never a path) and a voice (a saved voice, a preset speaker, an OpenAI
voice name mapped by NARRATE_OPENAI_VOICES, or a sample sent as a data: URL; never a file of the
server). Used by the speech endpoint (jobs/web/speech_api.py), `POST /v1/narrations`
(jobs/web/submitting.py) and `/v1/audio/voices`; a refusal names the field it is about."""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path

import redis
from narrate.jobs.api.model_choice import DEFAULT_MODELS, is_hub_id, is_published
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.proof.recognizer_choice import AUTO
from narrate.jobs.settings import MAX_VOICE_BYTES, Settings
from narrate.jobs.voices.choice import VoiceChoice, choose
from narrate.jobs.web.errors import ApiError

OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "onyx",
    "nova",
    "sage",
    "shimmer",
    "verse",
    "marin",
    "cedar",
)


def offered_models(settings: Settings) -> list[str]:
    """What `model` takes, as GET /v1/models lists it: OpenAI's names (the workers' default), the
    server's own model (a path on this host is taken but not shown) and the defaults of narrate's
    code; besides these, any published Qwen3-TTS id (jobs/api/model_choice.py `is_published`)."""
    own = [settings.model] if is_hub_id(settings.model) else []
    return list(dict.fromkeys([*OPENAI_MODELS, *own, *DEFAULT_MODELS]))


def check_model(model: str, settings: Settings) -> str | None:
    """OpenAI's names and the server's own model are the workers' default (None); a model of GET
    /v1/models or a published Qwen3-TTS id is passed on; anything else (another hub id, a path,
    relative or not: the server's folder is not the worker's) is refused, naming `model`."""
    if model in OPENAI_MODELS or model == settings.model:
        return None
    if model in offered_models(settings) or is_published(model):
        return model
    raise ApiError(
        400,
        f"unknown model {model[:80]!r}: use one of GET /v1/models (tts-1 is the default) or a "
        "published Qwen3-TTS id (Qwen/... or mlx-community/Qwen3-TTS-12Hz-...)",
        "model",
    )


# The speech recognizers and forced aligners a request of the HTTP API may name besides "auto" (the worker's own):
# the published families narrate hears with (Parakeet TDT, Whisper and Qwen3-ASR as mlx-community converts them, and
# Qwen's own ids), never another hub id nor a path (the server's folder is not the worker's).
RECOGNIZER_ID = re.compile(
    r"^(?:mlx-community/(?:parakeet-tdt-0\.6b-v[23]|whisper-(?:tiny|base|small|medium|large-v3|large-v3-turbo)"
    r"(?:-(?:asr-)?(?:fp16|bf16|4bit|8bit))?)|(?:Qwen|mlx-community)/Qwen3-ASR-(?:0\.6B|1\.7B)(?:-(?:bf16|4bit|6bit|8bit))?)$"
)
ALIGNER_ID = re.compile(r"^(?:Qwen|mlx-community)/Qwen3-ForcedAligner-0\.6B(?:-(?:bf16|4bit|6bit|8bit))?$")


def check_helper_model(field: str, value: str | None, settings: Settings) -> str | None:
    """`proof` or `word_timings` (`field`) as the HTTP API takes it: off (empty), "auto" (the worker's own
    NARRATE_PROOF_MODEL / NARRATE_ALIGN_MODEL, or narrate's choice), the server's own setting, or a published
    recognizer / aligner id; anything else (another hub id, a path, relative or not) is refused before anything is
    stored, naming the field and nothing of the server's folders: the same policy as `model`."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.lower() in (*AUTO, "true", "on", "1"):  # the form's checkbox sends a truth
        return "auto"
    own = settings.proof_model if field == "proof" else settings.align_model
    allowed = RECOGNIZER_ID if field == "proof" else ALIGNER_ID
    if value == own or (allowed.match(value) and is_hub_id(value)):
        return value
    kind = (
        "speech recognizer (mlx-community/parakeet-tdt-0.6b-v2, mlx-community/whisper-large-v3-turbo, "
        "Qwen/Qwen3-ASR-0.6B...)"
        if field == "proof"
        else "forced aligner (mlx-community/Qwen3-ForcedAligner-0.6B-8bit)"
    )
    raise ApiError(
        400,
        f"unknown {field} model {value[:80]!r}: send auto (the worker's own) or a published {kind}; "
        "a path or another hub id is not taken",
        field,
    )


def sample_from_data_url(url: str, folder: Path) -> Path:
    """A voice sample sent as a data: URL, written to `folder` (the only way a request names a sample)."""
    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise ApiError(400, "a voice sample is a base64 data: URL (data:audio/wav;base64,...)", "voice")
    if len(data) > MAX_VOICE_BYTES * 4 // 3 + 4:
        raise ApiError(413, f"the voice sample is larger than {MAX_VOICE_BYTES // 2**20} MiB, the limit", "voice")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "the voice sample's data: URL is not valid base64", "voice") from None
    path = folder / "voice-sample"
    path.write_bytes(raw)
    return path


def choose_voice(
    r: redis.Redis, settings: Settings, voice: str, model: str | None, instruct: str | None, folder: Path
) -> VoiceChoice:
    """A saved voice, a preset speaker, an OpenAI name mapped by NARRATE_OPENAI_VOICES, or a data: URL."""
    ffmpeg = ffmpeg_exe(settings.ffmpeg)
    mapped = dict(settings.openai_voices).get(voice.lower())
    try:
        if voice.startswith("data:"):
            return choose(r, sample_from_data_url(voice, folder), model, ffmpeg, instruct, settings.model)
        return choose(r, mapped or voice, model, ffmpeg, instruct, settings.model, files=False)
    except BadInput as e:
        if mapped is None and voice.lower() in OPENAI_VOICES:
            raise ApiError(
                400,
                f"voice {voice!r} is an OpenAI voice name, which this server does not map: set "
                f"NARRATE_OPENAI_VOICES={voice.lower()}=NAME (a saved voice or a preset speaker) on the server, "
                "or name a saved voice (GET /v1/audio/voices)",
                "voice",
            ) from None
        raise ApiError(400, str(e).replace(f"{folder}{os.sep}", ""), "voice") from None
