"""The synthesis engine: Qwen3-TTS through mlx-audio, continuous batching (admission, decode loop,
batch rows), the compiled code-predictor step, the streaming codec, models (Base, CustomVoice,
VoiceDesign), their keys, the voices each kind speaks (voices: every row its own), the voice cache
and every mlx-audio internal narrate relies on (mlx_compat). Never imports
narrate.worker.process."""
