"""Random-weight Qwen3-TTS checkpoints in the exact on-disk layout mlx-audio loads (that of a
``Qwen/Qwen3-TTS-12Hz-*`` snapshot), because the real weights are gigabytes and the tests must
never reach the Hugging Face hub::

    OUT/config.json, generation_config.json, model.safetensors (bf16 by default)
    OUT/tokenizer.json, tokenizer_config.json   (a byte-level BPE trained here, with the Qwen
                                                 special tokens at their real ids)
    OUT/speech_tokenizer/config.json, model.safetensors   (the codec, float32)

Sizes: ``tiny`` (4 talker layers, hidden 128, a codec decoder that costs ~20 ms a frame on a
CPU: the tests), ``0.6b`` and ``1.7b`` (the exact tensor shapes of Qwen3-TTS-12Hz-0.6B and 1.7B:
``narrate bench --random``).

Kinds (config.json's ``tts_model_type``): ``base`` (``-Base``: clones a voice sample through its
speaker encoder), ``custom-voice`` (``-CustomVoice``: four of the nine published preset speakers
in ``talker_config.spk_id``, one of them a dialect speaker; no speaker encoder) and ``voice-design``
(``-VoiceDesign``: a voice from a text description; no speaker encoder, no speakers). The weights
are a pure function of size, dtype and seed; the kinds share every tensor but the speaker
encoder's.

    python -m narrate.worker.testkit.random_checkpoint OUT --size tiny --kind custom-voice

``asr.py`` writes a tiny random-weight Qwen3-ASR checkpoint, the proof pass's recognizer in the tests (``--kind
asr``); ``aligner.py`` a tiny random-weight Qwen3-ForcedAligner, the word timings' aligner (``--kind aligner``).
"""

from narrate.worker.testkit.random_checkpoint.configs import KINDS, SIZES
from narrate.worker.testkit.random_checkpoint.weights import write_checkpoint

__all__ = ["KINDS", "SIZES", "write_checkpoint"]
