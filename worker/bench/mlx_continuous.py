"""``narrate bench``'s mlx-continuous-N: mlx-audio's own continuous batching, the engine of its server
(``Qwen3TTSBatchSession``: ``add`` requests, then ``step`` until idle; each step advances every active
request one codec frame in one batched talker step, and admits waiting requests into the slots that
freed, up to ``max_batch_size`` at once).

The session refuses reference audio, so it speaks a preset speaker on a CustomVoice checkpoint; the
bench compares it with narrate's preset rows (continuous-N-preset) on the same sentences and frame
budgets. Its own cap is one ``max_tokens`` for a whole session (its server keys sessions by it), so
``BudgetedSession`` stops each request at its own budget at the very point where the session checks
that cap (after each batched step and after each admission), and the slot it frees is refilled in
the same step, as with the session's own cap. Every sentence is queued at once, as the server queues
requests that arrive together; the session admits them as slots free. It is not streaming: a
request's audio is decoded when it ends (first audio: the first sentence to end, decoded).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mlx.core as mx
from mlx_audio.tts.continuous import TTSBatchEvent, TTSBatchItem, TTSBatchOptions
from mlx_audio.tts.models.qwen3_tts.continuous_batching import Qwen3TTSBatchSession
from narrate.worker.bench.workloads import Item

BUDGET = "max_tokens"  # a request's frame budget, in TTSBatchItem.extra


class BudgetedSession(Qwen3TTSBatchSession):
    """The session, each request stopped at its own frame budget (``item.extra["max_tokens"]``)."""

    _active: list[Any]  # the session's running requests (mlx-audio's own)

    def __init__(self, model: Any, options: TTSBatchOptions):
        super().__init__(model, options)
        self.budgets: dict[int, int] = {}

    def add(self, items: list[TTSBatchItem]) -> None:
        for item in items:
            self.budgets[item.sequence_id] = min(
                int(item.extra.get(BUDGET, self.options.max_tokens)), self.options.max_tokens
            )
        super().add(items)

    def _at_budget(self) -> list[TTSBatchEvent]:
        """Retire the active requests that reached their budget, as the session retires those at its cap."""
        done = [s for s in self._active if len(s.generated_codes) >= self.budgets[s.sequence_id]]
        if done:
            self._active = [s for s in self._active if s not in done]
        return [self._decode_state(s) for s in done]

    def _advance_active(self) -> list[TTSBatchEvent]:
        events: list[TTSBatchEvent] = super()._advance_active()
        return events + self._at_budget()

    def _admit_pending(self) -> list[TTSBatchEvent]:
        events: list[TTSBatchEvent] = super()._admit_pending()
        return events + self._at_budget()


def options_for(model: Any, size: int, items: list[Item]) -> TTSBatchOptions:
    """The session's options: the checkpoint's sampling (generation_config.json, as the server resolves
    it), `size` slots, the longest budget as its cap, no streaming."""
    sampling = model._resolve_generation_options(None, None, None, None, None)
    return TTSBatchOptions(
        temperature=sampling["temperature"],
        top_p=sampling["top_p"],
        top_k=sampling["top_k"],
        repetition_penalty=sampling["repetition_penalty"],
        max_tokens=max(it.budget for it in items),
        max_batch_size=size,
    )


def mlx_continuous(model: Any, items: list[Item], size: int, speaker: str) -> Iterator[int]:
    """Every item through one BudgetedSession of `size` slots in `speaker`'s voice; yields each
    request's frames when its audio is decoded."""
    session = BudgetedSession(model, options_for(model, size, items))
    mx.random.seed(0)
    session.add(
        [
            TTSBatchItem(sequence_id=i, text=it.text, voice=speaker, extra={BUDGET: it.budget})
            for i, it in enumerate(items)
        ]
    )
    while not session.idle:
        for event in session.step():
            if event.error is not None:
                raise event.error
            if event.audio is not None:
                mx.eval(event.audio)  # its server writes the audio out: the decode is part of the work
            yield int(event.token_count)
