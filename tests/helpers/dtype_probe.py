"""Watches a loaded Qwen3-TTS model while it generates: the dtype of the speaker embedding
handed to the prefill builder (a clone's x-vector, or a preset speaker's codec embedding), of the
prefill, of the talker's and code predictor's KV caches and of the talker logits. Instance-level
wrappers only; nothing in mlx-audio is modified."""

from __future__ import annotations

import mlx.core as mx


def _name(dtype) -> str:
    return str(dtype).removeprefix("mlx.core.")


class DtypeProbe:
    def __init__(self, model):
        self.model = model
        self.seen: dict[str, set[str]] = {
            "embedding": set(),
            "prefill": set(),
            "talker_kv": set(),
            "code_kv": set(),
            "logits": set(),
        }
        self.checks = 0
        self._caches: list = []
        self._code_caches: list = []
        talker, predictor = model.talker, model.talker.code_predictor
        make_talker, make_code = talker.make_cache, predictor.make_cache
        prepare, sample = model._prepare_generation_inputs, model._sample_token
        sample_batch = model._sample_token_batch

        def make_cache(*a, **k):
            c = make_talker(*a, **k)
            self._caches.append(c)
            return c

        def make_code_cache(*a, **k):
            c = make_code(*a, **k)
            self._code_caches.append(c)
            return c

        speakers = model.config.talker_config.spk_id or {}

        def prepare_inputs(text, *a, ref_audio=None, **k):
            speaker = k.get("speaker")
            if ref_audio is not None:  # what the x-vector path will concatenate into the prefill
                self.seen["embedding"].add(_name(model.extract_speaker_embedding(ref_audio).dtype))
            elif speaker and speaker.lower() in speakers:  # a preset: its codec embedding takes that place
                ids = mx.array([[speakers[speaker.lower()]]])
                self.seen["embedding"].add(_name(talker.get_input_embeddings()(ids).dtype))
            out = prepare(text, *a, ref_audio=ref_audio, **k)
            self.seen["prefill"].add(_name(out[0].dtype))
            return out

        def sample_token(logits, *a, **k):
            if k.get("suppress_tokens") is not None:  # the talker's first-codebook logits
                self.seen["logits"].add(_name(logits.dtype))
            return sample(logits, *a, **k)

        def sample_token_batch(logits, *a, **k):
            if k.get("suppress_tokens") is not None:
                self.seen["logits"].add(_name(logits.dtype))
            return sample_batch(logits, *a, **k)

        from narrate.worker.engine import decode_loop  # narrate's batched path samples on its own

        sample_rows = self._sample_rows = decode_loop.sample_rows

        def probed_sample_rows(logits, *a, suppress=None, **k):
            if suppress is not None:
                self.seen["logits"].add(_name(logits.dtype))
            return sample_rows(logits, *a, suppress=suppress, **k)

        decode_loop.sample_rows = probed_sample_rows

        # narrate's batched path gives the code predictor its own cache, inside a compiled
        # function: a fresh compiled step (traced while probed) shows its caches' dtypes.
        from narrate.worker.engine import code_predictor_step

        self._grow_init = grow_init = code_predictor_step._GrowingCache.__init__

        def probed_grow_init(cache):
            grow_init(cache)
            self._code_caches.append([cache])

        code_predictor_step._GrowingCache.__init__ = probed_grow_init
        vars(model).pop(code_predictor_step.STEP_ATTR, None)
        talker.make_cache = make_cache
        predictor.make_cache = make_code_cache
        model._prepare_generation_inputs = prepare_inputs
        model._sample_token = sample_token
        model._sample_token_batch = sample_token_batch

    def check_live(self) -> None:
        """Call while generation is paused mid-stream: records the live KV-cache dtypes."""
        for key, caches in (("talker_kv", self._caches), ("code_kv", self._code_caches)):
            for cache in caches[-1:]:
                for layer in cache:
                    if getattr(layer, "keys", None) is not None:
                        self.seen[key].add(_name(layer.keys.dtype))
        self.checks += 1

    def problems(self, want: str, unobserved: tuple[str, ...] = ()) -> list[str]:
        """What was seen in another dtype than `want`, and what was never seen (but `unobserved`:
        a designed voice has no speaker embedding)."""
        out = [f"{k}: {sorted(v)} (want {want})" for k, v in self.seen.items() if v and v != {want}]
        out += [f"{k}: never observed" for k, v in self.seen.items() if not v and k not in unobserved]
        return out

    def remove(self) -> None:
        from narrate.worker.engine import decode_loop

        decode_loop.sample_rows = self._sample_rows
        from narrate.worker.engine import code_predictor_step

        code_predictor_step._GrowingCache.__init__ = self._grow_init
        vars(self.model).pop(code_predictor_step.STEP_ATTR, None)  # traced while probed
        for obj, name in (
            (self.model.talker, "make_cache"),
            (self.model.talker.code_predictor, "make_cache"),
            (self.model, "_prepare_generation_inputs"),
            (self.model, "_sample_token"),
            (self.model, "_sample_token_batch"),
        ):
            delattr(obj, name)
