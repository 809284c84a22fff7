"""Offline, a helper model (the proof pass's recognizer, the word timings' aligner) the hub cache
does not hold cannot be had: said when the job is submitted, not after its synthesis. "Offline" is
HF_HUB_OFFLINE set in the submitting process (the worker's own setting may differ: it says so
again, and the same way, when it loads the model)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from narrate.jobs.api.model_choice import DRY_RUN
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.languages import tts_name
from narrate.jobs.errors import BadInput
from narrate.jobs.proof.recognizer_choice import HUB_ID, proof_model
from narrate.jobs.readalong.aligning import align_model
from narrate.jobs.settings import Settings


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def in_hub_cache(model: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(model, "config.json"), str)


def random_helper(model: str, what: str) -> str:
    """The command that writes a random-weight checkpoint of the helper `model`'s kind (`what`:
    "recognizer" or "aligner"), for trying narrate offline."""
    kind = "aligner" if what == "aligner" else "parakeet" if "parakeet" in model.lower() else "asr"
    return f"{DRY_RUN.replace(' --size tiny', '')} --kind {kind}"


def check_helpers_offline(
    settings: Settings, docs: Sequence[Document], proof: str | None, word_timings: str | None
) -> None:
    """BadInput when offline and a helper model these documents need is a hub id the cache lacks."""
    if not offline() or not (proof or word_timings) or settings.engine == "fake":  # the fake engine loads no model
        return
    for doc in docs:
        languages = {tts_name(doc.language_of(p)) for p in range(len(doc.paragraphs))}
        wanted = []
        if proof:
            wanted.append(("--proof", "recognizer", proof_model(proof, languages, settings.proof_model)))
        if word_timings:
            wanted.append(("--word-timings", "aligner", align_model(word_timings, settings.align_model)))
        for option, what, model in wanted:
            if HUB_ID.fullmatch(model) and not os.path.isdir(model) and not in_hub_cache(model):
                raise BadInput(
                    f"{option}: the {what} {model} is not in the hub cache and HF_HUB_OFFLINE is set; name a local "
                    f"{what} ({option} DIR; to try it offline, a random-weight one: `{random_helper(model, what)}`, "
                    f"then {option} DIR), or submit again "
                    "once the network is back",
                    param=option.removeprefix("--").replace("-", "_"),
                )
