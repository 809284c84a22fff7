"""The checked manifests of rq, rq-dashboard and mlx-audio internals: the pinned versions pass, and
removing or renaming one listed internal fails loudly, naming it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


def test_the_checks_pass_on_the_tested_versions():
    from importlib.metadata import version

    from narrate.jobs.dashboard import compat
    from narrate.jobs.queue import rq_compat
    from narrate.worker.engine import codec_stream, mlx_compat

    assert version("rq").startswith(("2.12.", "3.0."))  # the two tested (pyproject)
    assert version("rq-dashboard") == compat.TESTED_VERSION == "0.9.0"
    assert version("mlx-audio") == "0.6.2"
    rq_compat.check_rq_internals()
    compat.check_dashboard_internals()
    mlx_compat.check_internals()
    assert codec_stream.STATE_ATTRS == mlx_compat.codec_state_attrs() == ("_buffer", "_overflow")


def test_a_changed_rq_internal_fails_loudly(monkeypatch):
    from narrate.jobs.queue import rq_compat
    from rq.job import Job
    from rq.worker import BaseWorker, SimpleWorker

    def execute_job(self, job):  # the queue parameter narrate's overrides pass on: gone
        return None

    monkeypatch.setattr(BaseWorker, "execute_job", execute_job)
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"BaseWorker.execute_job lacks \['queue'\]"):
        rq_compat.check_rq_internals()
    monkeypatch.undo()

    # A parameter a call must now give that narrate does not pass (rq 3.0's maintain_heartbeats took the
    # execution: narrate's beats failed, logged only, until rq_compat.maintain_heartbeats passed it).
    def maintain_heartbeats(self, job, ttl):
        return None

    monkeypatch.setattr(BaseWorker, "maintain_heartbeats", maintain_heartbeats)
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"maintain_heartbeats requires \['ttl'\], which narrate"):
        rq_compat.check_rq_internals()
    monkeypatch.undo()

    # An instance attribute set in __init__, which the claiming worker writes on the job it takes:
    # renamed, narrate would write a name rq no longer reads, and nothing would say so.
    job_init = Job.__init__

    def renamed_server_version(self, *args, **kwargs):
        job_init(self, *args, **kwargs)
        self.server_version = self.__dict__.pop("redis_server_version")

    monkeypatch.setattr(Job, "__init__", renamed_server_version)
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"Job.redis_server_version is missing"):
        rq_compat.check_rq_internals()
    monkeypatch.undo()

    worker_init = SimpleWorker.__init__

    def renamed_stop_flag(self, *args, **kwargs):
        worker_init(self, *args, **kwargs)
        self.stop_requested = self.__dict__.pop("_stop_requested")

    monkeypatch.setattr(SimpleWorker, "__init__", renamed_stop_flag)
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"SimpleWorker._stop_requested is missing"):
        rq_compat.check_rq_internals()


def _blueprint_renaming(old: str, new: str):
    """rq-dashboard's blueprint as a release that renamed endpoint `old` to `new` would make it."""
    from flask import Blueprint, Flask
    from rq_dashboard import web

    real = Flask("probe")
    real.register_blueprint(web.blueprint)
    bp = Blueprint("rq_dashboard", web.__name__, template_folder="templates", static_folder="static")
    for rule in real.url_map.iter_rules():
        name = rule.endpoint.removeprefix("rq_dashboard.")
        if rule.endpoint.startswith("rq_dashboard.") and name != "static":
            view = real.view_functions[rule.endpoint]
            bp.add_url_rule(rule.rule, new if name == old else name, view, defaults=rule.defaults, methods=rule.methods)
    return bp


def test_a_changed_rq_dashboard_internal_fails_loudly(monkeypatch):
    from narrate.jobs.dashboard import compat
    from narrate.jobs.dashboard.app import make_app
    from rq_dashboard import cli, web

    # A replaced global rq-dashboard dropped: assigning it would change nothing. make_app refuses.
    monkeypatch.delattr(web, "serialize_current_job")
    with pytest.raises(compat.DashboardInternalsChanged, match=r"rq_dashboard.web.serialize_current_job is missing"):
        compat.check_dashboard_internals()
    with pytest.raises(compat.DashboardInternalsChanged, match=r"tested with rq-dashboard 0\.9\.0") as raised:
        make_app("redis://127.0.0.1:6379/2")
    assert "serialize_current_job" in str(raised.value)
    monkeypatch.undo()

    # An endpoint the cancel-instead-of-delete guard matches, renamed.
    monkeypatch.setattr(cli, "blueprint", _blueprint_renaming("delete_job_view", "delete_job"))
    with pytest.raises(compat.DashboardInternalsChanged, match=r"endpoint rq_dashboard.delete_job_view is missing"):
        compat.check_dashboard_internals()
    monkeypatch.undo()

    # A view that no longer reads a replaced global by that name.
    app = cli.make_flask_app(None, None, None, "")
    app.view_functions["rq_dashboard.list_workers"] = lambda instance_number: {"workers": []}
    with pytest.raises(compat.DashboardInternalsChanged, match=r"list_workers no longer reads rq_dashboard.web.Worker"):
        compat.check_dashboard_internals(app)


@pytest.mark.parametrize(
    ("cls", "attr"),
    [("CausalConv1d", "_buffer"), ("DecoderOutputConv", "_buffer"), ("DecoderBlockUpsample", "_overflow")],
)
def test_a_renamed_codec_state_fails_loudly(monkeypatch, cls, attr):
    """Renamed per-row codec state would not be swapped between rows: every row would continue
    another row's audio."""
    from mlx_audio.tts.models.qwen3_tts import speech_tokenizer
    from narrate.worker.engine import mlx_compat

    owner = getattr(speech_tokenizer, cls)
    init = owner.__init__

    def renamed(self, *args, **kwargs):
        init(self, *args, **kwargs)
        object.__setattr__(self, "_state", self.__dict__.pop(attr))

    monkeypatch.setattr(owner, "__init__", renamed)
    with pytest.raises(mlx_compat.InternalsChanged, match=rf"speech_tokenizer.{cls} lacks \['{attr}'\]"):
        mlx_compat.check_internals()


def test_a_loaded_decoder_with_unknown_state_fails_loudly():
    """With a model, every decoder module that resets streaming state must hold state narrate keeps."""
    import mlx.nn as nn
    from mlx_audio.tts.models.qwen3_tts import speech_tokenizer
    from narrate.worker.engine import mlx_compat

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = speech_tokenizer.CausalConv1d(1, 1, 2)
            self.upsample = speech_tokenizer.DecoderBlockUpsample(1, 1, 1)
            object.__setattr__(self.upsample, "_tail", self.upsample.__dict__.pop("_overflow"))

    model = SimpleNamespace(speech_tokenizer=SimpleNamespace(decoder=Decoder()))
    with pytest.raises(mlx_compat.InternalsChanged, match=r"stateful modules \['DecoderBlockUpsample'\] hold none of"):
        mlx_compat.check_internals(model)


def test_a_dropped_generate_keyword_fails_loudly(monkeypatch):
    from mlx_audio.tts.models.qwen3_tts.qwen3_tts import Model
    from narrate.worker.engine import mlx_compat

    def generate(
        self,
        text,
        voice=None,
        instruct=None,
        reference_audio=None,
        max_tokens=None,
        stream=False,
        streaming_interval=2.0,
        verbose=False,
    ): ...

    monkeypatch.setattr(Model, "generate", generate)
    with pytest.raises(mlx_compat.InternalsChanged, match=r"qwen3_tts.Model.generate lacks \['ref_audio'\]"):
        mlx_compat.check_internals()


def _small_decoder():
    """mlx-audio's codec decoder, small (no checkpoint): two decoder blocks, one upsampling pair."""
    from mlx_audio.tts.models.qwen3_tts.config import Qwen3TTSTokenizerDecoderConfig
    from mlx_audio.tts.models.qwen3_tts.speech_tokenizer import Qwen3TTSSpeechTokenizerDecoder

    config = Qwen3TTSTokenizerDecoderConfig(
        latent_dim=16,
        codebook_dim=32,
        codebook_size=64,
        decoder_dim=16,
        hidden_size=32,
        intermediate_size=64,
        head_dim=16,
        num_attention_heads=2,
        num_hidden_layers=1,
        num_key_value_heads=2,
        semantic_codebook_size=64,
        upsample_rates=[2, 3],
        upsampling_ratios=[2],
        vector_quantization_hidden_dimension=32,
    )
    return Qwen3TTSSpeechTokenizerDecoder(config)


def test_a_renamed_layer_the_fast_codec_replaces_fails_loudly(monkeypatch):
    """codec_fast.py replaces the convolution a decoder module calls through its ``conv``: renamed, the
    CPU decode would quietly keep mlx-audio's slower layers. The check names it and the version."""
    from mlx_audio.tts.models.qwen3_tts import speech_tokenizer
    from narrate.worker.engine import mlx_compat

    owner = speech_tokenizer.CausalTransposeConv1d
    init = owner.__init__

    def renamed(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.transposed = self.pop("conv")

    monkeypatch.setattr(owner, "__init__", renamed)
    with pytest.raises(mlx_compat.InternalsChanged) as raised:
        mlx_compat.check_internals()
    message = str(raised.value)
    assert message.startswith("mlx-audio 0.6.2's Qwen3-TTS internals changed (narrate is written against 0.6.2)")
    assert "speech_tokenizer.CausalTransposeConv1d lacks ['conv'] (the layer codec_fast.py replaces" in message
    monkeypatch.undo()

    monkeypatch.delattr(speech_tokenizer.DecoderBlock, "step")  # a stage codec_fast settles
    with pytest.raises(mlx_compat.InternalsChanged, match=r"speech_tokenizer.DecoderBlock.step is missing"):
        mlx_compat.check_internals()


def test_a_loaded_decoder_without_what_the_fast_codec_relies_on_fails_loudly():
    """With a model: the stage lists streaming_step runs, and a layer of every kind codec_fast replaces."""
    from narrate.worker.engine import codec_fast, mlx_compat

    decoder = _small_decoder()
    assert codec_fast.structure_problems(decoder) == []

    def check(decoder) -> str:
        with pytest.raises(mlx_compat.InternalsChanged) as raised:
            mlx_compat.check_internals(SimpleNamespace(speech_tokenizer=SimpleNamespace(decoder=decoder)))
        return str(raised.value)

    renamed = _small_decoder()
    renamed.upsamplers = renamed.pop("upsample")
    assert "Model.speech_tokenizer.decoder lacks ['upsample']" in check(renamed)

    tupled = _small_decoder()
    tupled.upsample = [tuple(pair) for pair in tupled.upsample]
    assert "Model.speech_tokenizer.decoder.upsample is not a list of [transposed convolution, ConvNeXt block" in (
        check(tupled)
    )

    hidden = _small_decoder()  # the ConvNeXt blocks' depthwise convolution under another name
    for _, block in hidden.upsample:
        block.dwconv.depthwise = block.dwconv.pop("conv")
    assert "Model.speech_tokenizer.decoder has no depthwise convolution (ConvNeXtBlock.dwconv.conv)" in check(hidden)
    assert codec_fast.structure_problems(hidden) == [
        "Model.speech_tokenizer.decoder has no depthwise convolution (ConvNeXtBlock.dwconv.conv): "
        "codec_fast.py's faster CPU layer for it would never be used"
    ]
