"""Random-weight Qwen3-TTS *Base* checkpoints in the exact on-disk layout mlx-audio loads (that of a
``Qwen/Qwen3-TTS-12Hz-*-Base`` snapshot), because the real weights are gigabytes and the tests
must never reach the Hugging Face hub::

    OUT/config.json, generation_config.json, model.safetensors (bf16 by default)
    OUT/tokenizer.json, tokenizer_config.json   (a byte-level BPE trained here, with the Qwen
                                                 special tokens at their real ids)
    OUT/speech_tokenizer/config.json, model.safetensors   (the codec, float32)

Sizes: ``tiny`` (4 talker layers, hidden 128, a codec decoder that costs ~20 ms a frame on a
CPU: the tests), ``0.6b`` and ``1.7b`` (the exact tensor shapes of Qwen3-TTS-12Hz-0.6B-Base and
1.7B-Base: ``narrate bench --random``). The weights are a pure function of size, dtype and seed.

    python -m narrate.worker.testkit.random_checkpoint OUT --size tiny
"""

from narrate.worker.testkit.random_checkpoint.configs import SIZES
from narrate.worker.testkit.random_checkpoint.weights import write_checkpoint

__all__ = ["SIZES", "write_checkpoint"]
