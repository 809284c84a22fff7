"""What batched synthesis relies on, without a model: a change in an mlx-audio internal narrate uses
fails loudly, batches group by length within reading-order windows, and the fake engine needs no
mlx."""

from __future__ import annotations

import subprocess
import sys

import pytest
from narrate.jobs.book.synthesis import Sentence
from narrate.worker.engine import mlx_compat
from narrate.worker.engine.mlx_engine import batches

TEXTS = [
    "Hello there, my friend.",
    "The weather is nice today, isn't it?",
    "Short.",
    "Another sentence, of a rather different length, is here as well.",
    "Five.",
]


def sentences(budget=7):
    return [Sentence(i, t, 1000 + 17 * i, budget) for i, t in enumerate(TEXTS)]


def test_changed_internals_fail_loudly(monkeypatch):
    from mlx_audio.tts.models.qwen3_tts.qwen3_tts import Model

    monkeypatch.delattr(Model, "_next_batch_input_embeds")
    with pytest.raises(mlx_compat.InternalsChanged, match="_next_batch_input_embeds is missing"):
        mlx_compat.check_internals()


def test_a_renamed_keyword_fails_loudly(monkeypatch):
    from mlx_audio.tts.models.qwen3_tts.talker import Qwen3TTSTalkerCodePredictor

    def renamed(self, inputs_embeds, position_ids=None, mask=None, cache=None, step=0): ...

    monkeypatch.setattr(Qwen3TTSTalkerCodePredictor, "__call__", renamed)
    with pytest.raises(
        mlx_compat.InternalsChanged, match=r"Qwen3TTSTalkerCodePredictor.__call__ lacks \['generation_step'\]"
    ):
        mlx_compat.check_internals()


def test_a_dropped_config_field_fails_loudly(monkeypatch):
    from mlx_audio.tts.models.qwen3_tts.config import Qwen3TTSTalkerConfig

    fields = {k: v for k, v in Qwen3TTSTalkerConfig.__dataclass_fields__.items() if k != "codec_eos_token_id"}
    monkeypatch.setattr(Qwen3TTSTalkerConfig, "__dataclass_fields__", fields)
    with pytest.raises(mlx_compat.InternalsChanged, match=r"Qwen3TTSTalkerConfig lacks \['codec_eos_token_id'\]"):
        mlx_compat.check_internals()


def test_batches_group_by_length_within_reading_order_windows():
    ss = [Sentence(i, "x" * ((i * 7) % 11 + 1), i, 5) for i in range(40)]
    groups = batches(ss, 4)  # windows of 16 sentences
    assert sorted(s.index for g in groups for s in g) == list(range(40))
    for g in groups:
        assert max(s.index for s in g) // 16 == min(s.index for s in g) // 16
    first_window = [s for g in groups[:4] for s in g]
    assert [len(s.text) for s in first_window] == sorted(len(s.text) for s in first_window)


def test_fake_engine_implements_the_protocol_without_mlx():
    code = (
        "import sys; from narrate.worker.testkit.fake_engine import FakeEngine; "
        "from narrate.jobs.book.synthesis import Sentence; e = FakeEngine(2); v = e.voice(None, 'x'); "
        "cs = list(e.synthesize([Sentence(0, 'Hi there.', 1, 5)], v)); "
        "assert cs[-1].final and not v.encoder_runs; "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('mlx', 'mlx_audio')], 'mlx imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
