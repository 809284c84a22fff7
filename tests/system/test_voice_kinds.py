"""Voices by name on the real tiny engine: the three kinds of Qwen3-TTS checkpoint load (Base,
CustomVoice, VoiceDesign); every row of a batch speaks in its own voice (preset speakers with
their instructions, different cloned samples, designs) and comes out bit-identical to the row
alone, joining early or late; a voice a model cannot speak is refused in one line that says what
it speaks instead; an instruction a 0.6B model ignores is a warning."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import mlx.core as mx
import numpy as np
import pytest
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.errors import BadInput
from narrate.worker.engine.mlx_engine import MlxEngine
from narrate.worker.engine.models import load, resolve
from narrate.worker.engine.row_voices import RowVoice

TEXTS = [
    "Hello there, my friend.",
    "The weather is nice today, isn't it?",
    "Short.",
    "Another sentence, of a rather different length, is here as well.",
    "Five.",
]
MIXED = (7, 3, 9, 5, 6)  # budgets: rows end at different steps, so others join late
BATCHES = [(2, True), (5, True), (5, False)]  # (rows, continuous)
SPEAKERS = ["aiden", "eric", "ryan", "vivian"]  # the tiny CustomVoice checkpoint's (four of the published nine)
# Different speakers and instructions in one batch (eric speaks a dialect: its own language tag).
PRESETS = {
    0: RowVoice.preset("ryan"),
    1: RowVoice.preset("aiden", "Calm and slow."),
    2: RowVoice.preset("eric"),
    3: RowVoice.preset("ryan", "Whispering, as if telling a secret."),
    4: RowVoice.preset("vivian", "Very happy."),
}


def mixed() -> list[Sentence]:
    return [Sentence(i, t, 1000 + 17 * i, MIXED[i]) for i, t in enumerate(TEXTS)]


def collect(engine, ss, voice, size) -> dict[int, np.ndarray]:
    """Each sentence's audio; every one ends in a final chunk at its budget (random weights: no EOS)."""
    parts: dict[int, list] = {}
    for c in engine.batched(ss, voice, size):
        parts.setdefault(c.index, []).append(c)
    for s in ss:
        assert parts[s.index][-1].final and sum(c.frames for c in parts[s.index]) == s.budget
    return {i: np.concatenate([c.pcm for c in cs]) for i, cs in parts.items()}


def alone(loaded, voices: dict[int, RowVoice]) -> dict[int, np.ndarray]:
    engine = MlxEngine(loaded, runaway_retries=0)
    return {s.index: collect(engine, [s], voices[s.index], 1)[s.index] for s in mixed()}


def one_sentence(loaded, voice) -> np.ndarray:
    return collect(MlxEngine(loaded, runaway_retries=0), [Sentence(0, TEXTS[0], 5, 4)], voice, 1)[0]


@pytest.fixture(scope="module")
def base(checkpoint):
    return load(resolve(str(checkpoint), None))


@pytest.fixture(scope="module")
def custom(custom_voice_checkpoint):
    return load(resolve(str(custom_voice_checkpoint), None))


@pytest.fixture(scope="module")
def design(voice_design_checkpoint):
    return load(resolve(str(voice_design_checkpoint), None))


def x_vector(loaded, seed: int) -> mx.array:
    audio = mx.array((0.1 * np.random.default_rng(seed).standard_normal(48_000)).astype(np.float32))
    return type(loaded.model).extract_speaker_embedding(loaded.model, audio).astype(loaded.talker_dtype)


@pytest.fixture(scope="module")
def clones(base) -> dict[int, RowVoice]:
    """Two cloned samples (two x-vectors), alternating rows."""
    a, b = RowVoice.clone(x_vector(base, 0)), RowVoice.clone(x_vector(base, 1))
    return {i: a if i % 2 else b for i in range(len(TEXTS))}


@pytest.fixture(scope="module")
def presets_alone(custom):
    return alone(custom, PRESETS)


@pytest.fixture(scope="module")
def clones_alone(base, clones):
    return alone(base, clones)


@pytest.mark.parametrize(("size", "continuous"), BATCHES)
def test_preset_rows_are_the_same_alone_or_in_any_batch(custom, presets_alone, size, continuous):
    """Five rows, four speakers, three instructions, in one continuous batch of 2 (rows 2, 3, 4
    join at steps 3, 7 and 9) or 5, or one static batch: each row bit-identical to it alone."""
    batched = collect(MlxEngine(custom, runaway_retries=0, continuous=continuous), mixed(), PRESETS, size)
    assert set(batched) == set(presets_alone)
    for i, pcm in batched.items():
        assert pcm.size == MIXED[i] * 1920
        np.testing.assert_array_equal(pcm, presets_alone[i])


@pytest.mark.parametrize(("size", "continuous"), BATCHES)
def test_two_cloned_voices_in_one_batch_are_each_the_same_as_alone(base, clones, clones_alone, size, continuous):
    batched = collect(MlxEngine(base, runaway_retries=0, continuous=continuous), mixed(), clones, size)
    assert set(batched) == set(clones_alone)
    for i, pcm in batched.items():
        np.testing.assert_array_equal(pcm, clones_alone[i])


def test_a_cast_speaks_each_sentence_in_its_labels_voice(base, clones, clones_alone):
    """The job path with a cast (voices by label, Sentence.voice): each row in its label's voice."""
    from dataclasses import replace

    from narrate.jobs.book.synthesis import VoiceEmbedding

    cast = {"narrator": VoiceEmbedding(clones[0], True, 0), "alice": VoiceEmbedding(clones[1], True, 0)}
    ss = [replace(s, voice="alice" if s.index % 2 else "narrator") for s in mixed()]
    engine = MlxEngine(base, batch_size=2, runaway_retries=0)
    parts: dict[int, list] = {}
    for c in engine.synthesize(ss, cast):
        parts.setdefault(c.index, []).append(c.pcm)
    for i, pcm in clones_alone.items():
        np.testing.assert_array_equal(np.concatenate(parts[i]), pcm)
    with pytest.raises(ValueError, match="the cast has no voice 'bob'"):
        engine.synthesize([replace(ss[0], voice="bob")], cast)


def test_each_row_speaks_its_own_voice(base, custom, design, clones):
    """The same sentence and seed in another voice is other audio: the speaker, the instruction,
    the sample and the description each reach the row."""
    heard = [
        one_sentence(custom, RowVoice.preset("ryan")),
        one_sentence(custom, RowVoice.preset("aiden")),
        one_sentence(custom, RowVoice.preset("ryan", "Very happy.")),
        one_sentence(base, clones[0]),
        one_sentence(base, clones[1]),
        one_sentence(design, RowVoice.design("A deep, warm voice.")),
        one_sentence(design, RowVoice.design("A bright, quick voice.")),
    ]
    for i, a in enumerate(heard):
        for b in heard[i + 1 :]:
            assert a.shape == b.shape and not np.array_equal(a, b)


def test_designed_rows_synthesize_alone_or_together(design):
    """Two descriptions in one continuous batch (a clip job's candidates share one): each row runs to
    its budget, the same as alone."""
    voices = {i: RowVoice.design("A deep, warm voice." if i % 2 else "A bright, quick voice.") for i in range(5)}
    batched = collect(MlxEngine(design, runaway_retries=0), mixed(), voices, 2)
    by_itself = alone(design, voices)
    for i, pcm in batched.items():
        assert pcm.size == MIXED[i] * 1920 and np.abs(pcm).max() > 0
        np.testing.assert_array_equal(pcm, by_itself[i])


def refused(loaded, ref: VoiceRef) -> str:
    with pytest.raises(BadInput) as raised:
        MlxEngine(loaded).voice(None, ref)  # no Redis: refused before any sample is read
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_voice_the_model_cannot_speak_is_refused_in_one_line(base, custom, design):
    listed = ", ".join(SPEAKERS)
    src = {m.kind: m.resolved.source for m in (base, custom, design)}
    sample = VoiceRef.clone("a" * 64)
    assert refused(custom, sample) == (
        f"model {src['custom_voice']} is a CustomVoice model: it speaks its preset speakers ({listed}), not a sample; "
        "clone a sample with a Base model (--model mlx-community/Qwen3-TTS-12Hz-1.7B-Base)"
    )
    assert refused(design, sample) == (
        f"model {src['voice_design']} is a VoiceDesign model: it makes a voice from a description, not a sample; "
        "clone a sample with a Base model (--model mlx-community/Qwen3-TTS-12Hz-1.7B-Base)"
    )
    assert (
        refused(custom, VoiceRef.preset("Bob"))
        == f"model {src['custom_voice']} has no speaker 'bob'; its speakers: {listed}"
    )
    assert refused(base, VoiceRef.preset("ryan")) == (
        f"model {src['base']} is a Base model: it clones voice samples and has no preset speakers; "
        "speak a preset with a CustomVoice model (--model mlx-community/Qwen3-TTS-12Hz-1.7B-CustomVoice)"
    )
    assert "is a VoiceDesign model" in refused(design, VoiceRef.preset("ryan"))
    assert refused(base, VoiceRef.design("A deep voice.")) == (
        f"model {src['base']} is a Base model: it clones voice samples and designs no voice; "
        "design a voice with a VoiceDesign model (--model mlx-community/Qwen3-TTS-12Hz-1.7B-VoiceDesign)"
    )
    assert f"preset speakers ({listed}) and designs no voice" in refused(custom, VoiceRef.design("A deep voice."))
    assert refused(design, VoiceRef.design("  ")) == "a designed voice needs a description of the voice"
    with pytest.raises(BadInput, match="has no preset speakers"):  # handed to the engine directly
        list(MlxEngine(base).batched(mixed(), RowVoice.preset("ryan"), 2))
    with pytest.raises(BadInput, match="not a sample"):
        list(MlxEngine(custom).batched(mixed()[:1], RowVoice.clone(mx.zeros((1, 128), dtype=mx.bfloat16)), 1))


def test_the_suggested_model_is_the_same_hub_model_of_the_right_kind():
    from narrate.worker.engine.row_voices import suggest

    assert suggest("mlx-community/Qwen3-TTS-12Hz-0.6B-CustomVoice-6bit", "base") == (
        "mlx-community/Qwen3-TTS-12Hz-0.6B-Base-6bit"
    )
    assert suggest("mlx-community/Qwen3-TTS-12Hz-0.6B-Base-bf16", "voice_design") == (
        "mlx-community/Qwen3-TTS-12Hz-1.7B-VoiceDesign-bf16"  # VoiceDesign comes in 1.7B only
    )
    assert suggest("/models/my-checkpoint", "custom_voice") == "mlx-community/Qwen3-TTS-12Hz-1.7B-CustomVoice"


@pytest.fixture(scope="module")
def small_custom(custom_voice_checkpoint, tmp_path_factory):
    """The tiny CustomVoice checkpoint as a 0.6B one: config.json's tts_model_size "0b6"."""
    out = tmp_path_factory.mktemp("cv-0b6") / "ckpt"
    shutil.copytree(custom_voice_checkpoint, out)
    config = json.loads((out / "config.json").read_text())
    config["tts_model_size"] = "0b6"
    (out / "config.json").write_text(json.dumps(config))
    return load(resolve(str(out), None))


def test_a_06b_model_ignores_an_instruction_with_a_warning(small_custom, custom):
    """The warning goes to the job (its meta, and the worker's log with the job's id: jobs.task.job)."""
    assert small_custom.follows_instruct is False and custom.follows_instruct is True
    voice = MlxEngine(small_custom).voice(None, VoiceRef.preset("ryan", "Calm and slow."))
    warning = f"model {small_custom.resolved.source} ignores --instruct (0.6B models follow no instruction)"
    assert voice.warning == warning
    assert (voice.value.speaker, voice.value.instruct) == ("ryan", None)  # dropped, as mlx-audio drops it
    assert MlxEngine(small_custom).voice(None, VoiceRef.preset("ryan")).warning is None
    kept = MlxEngine(custom).voice(None, VoiceRef.preset("Ryan", "Calm and slow."))
    assert kept.warning is None and (kept.value.speaker, kept.value.instruct) == ("ryan", "Calm and slow.")
    # Through the job's call: on 0.6B the same audio with and without it (dropped, as mlx-audio's own
    # generate drops it there); on 1.7B the instruction reaches the model. mlx-audio's batch builder
    # would not drop it on 0.6B (narrate's rows go through it): the engine drops it itself.
    s = [Sentence(0, TEXTS[0], 5, 3)]

    def spoken(loaded, ref: VoiceRef) -> np.ndarray:
        engine = MlxEngine(loaded, batch_size=1, runaway_retries=0)
        return np.concatenate([c.pcm for c in engine.synthesize(s, engine.voice(None, ref))])

    calm, plain = VoiceRef.preset("ryan", "Calm and slow."), VoiceRef.preset("ryan")
    np.testing.assert_array_equal(spoken(small_custom, calm), spoken(small_custom, plain))
    assert not np.array_equal(spoken(custom, calm), spoken(custom, plain))
    kept = collect(MlxEngine(small_custom, runaway_retries=0), s, RowVoice.preset("ryan", "Calm and slow."), 1)[0]
    assert not np.array_equal(kept, spoken(small_custom, plain))


@pytest.mark.parametrize("kind", ["base", "custom_voice", "voice_design"])
def test_each_kind_of_checkpoint_loads_as_that_kind(kind, checkpoint, custom_voice_checkpoint, voice_design_checkpoint):
    """mlx-audio's loader takes each kind as the published checkpoints are taken; narrate's model
    says what it speaks."""
    import contextlib
    import io

    from mlx_audio.tts.utils import load_model

    path = {"base": checkpoint, "custom_voice": custom_voice_checkpoint, "voice_design": voice_design_checkpoint}[kind]
    with contextlib.redirect_stdout(io.StringIO()):
        model = load_model(str(path))
    config = json.loads((path / "config.json").read_text())
    assert model.config.tts_model_type == config["tts_model_type"] == kind
    assert model.config.tts_model_size == "tiny"
    assert (model.speaker_encoder is not None) == (kind == "base")
    speakers = sorted(model.get_supported_speakers())
    assert speakers == (SPEAKERS if kind == "custom_voice" else [])
    if kind == "custom_voice":
        talker = model.config.talker_config
        assert talker.spk_id["ryan"] == 3061 and talker.spk_id["aiden"] == 2861
        assert {n: d for n, d in talker.spk_is_dialect.items() if d} == {"eric": "sichuan_dialect"}
        assert {"sichuan_dialect", "beijing_dialect"} <= set(talker.codec_language_id)
    loaded = load(resolve(str(path), None))
    assert (loaded.kind, loaded.speakers, loaded.follows_instruct) == (kind, speakers, kind != "base")
    weights = mx.load(str(path / "model.safetensors"))
    base = mx.load(str(checkpoint / "model.safetensors"))
    assert any(k.startswith("speaker_encoder.") for k in weights) == (kind == "base")
    shared = "talker.model.codec_embedding.weight"  # the kinds share every talker tensor (same seed)
    assert mx.array_equal(weights[shared], base[shared]).item()


def test_the_command_line_writes_each_kind(tmp_path):
    out = tmp_path / "vd"
    proc = subprocess.run(
        [sys.executable, "-m", "narrate.worker.testkit.random_checkpoint", str(out), "--kind", "voice-design"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tiny voice-design checkpoint" in proc.stdout
    config = json.loads((out / "config.json").read_text())
    assert (config["tts_model_type"], config["tts_model_size"]) == ("voice_design", "tiny")
    assert config["talker_config"]["spk_id"] == {}
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    with pytest.raises(ValueError, match="unknown kind 'custom'"):
        write_checkpoint(tmp_path / "bad", kind="custom")
    assert not (tmp_path / "bad").exists()


def test_a_dropped_per_row_voice_keyword_fails_loudly(monkeypatch):
    """The batch builder's per-row speakers and instructions are what every row's voice rides on."""
    from mlx_audio.tts.models.qwen3_tts.qwen3_tts import Model
    from narrate.worker.engine import mlx_compat

    def prepare(self, texts, language="auto", ref_audio=None, ref_text=None, return_metadata=False): ...

    monkeypatch.setattr(Model, "_prepare_batch_inputs", prepare)
    with pytest.raises(mlx_compat.InternalsChanged, match=r"_prepare_batch_inputs lacks \['speakers', 'instructs'\]"):
        mlx_compat.check_internals()
