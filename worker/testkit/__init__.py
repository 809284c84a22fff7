"""Stand-ins for the real model, for the tests, the benchmark and the offline dry run only; a
worker uses none of this unless told to (NARRATE_ENGINE=fake).

- ``fake_engine``: a deterministic tone generator with fault injection, implementing
  narrate.jobs.task.model_protocols.Engine without mlx (fault tests); ``fake_recognizer`` beside it, the proof
  pass's recognizer that hears its tones as their text (or with a defect asked for); ``fake_aligner``, the word
  timings' aligner that spreads a take's words over it by their length;
- ``random_checkpoint``: random-weight Qwen3-TTS checkpoints (Base, CustomVoice, VoiceDesign) in
  the exact on-disk layout mlx-audio loads
  (``python -m narrate.worker.testkit.random_checkpoint OUT --size tiny --kind custom-voice``), and a tiny
  Qwen3-ASR recognizer for the proof pass (``--kind asr``) and a tiny Qwen3-ForcedAligner for word timings
  (``--kind aligner``).
"""
