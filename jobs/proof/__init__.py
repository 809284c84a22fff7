"""The proof pass: every synthesized sentence heard back by a speech recognizer and judged against the sentence as
it is spoken (``verdict``: word error rate, dropped, repeated and made-up words, a lost ending, pace, long
silences), which recognizer a job uses (``models``), and the takes of a sentence and which one is kept (``takes``).
Pure Python: the recognizer itself is the worker's (narrate.worker.engine.recognizer); see docs/proof.md."""
