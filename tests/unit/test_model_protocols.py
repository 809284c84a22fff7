"""A recognizer's and an aligner's lists of texts and languages are keyword-only, in the protocols and in every
implementation: `transcribe(takes, languages, texts)` and `align(takes, texts, languages)` took the same three
lists in two orders, so a call with the other's order ran with the lists swapped and no error."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from narrate.jobs.task.model_protocols import Aligner, Recognizer
from narrate.worker.engine.aligner import MlxAligner
from narrate.worker.engine.recognizer import MlxRecognizer
from narrate.worker.testkit.fake_aligner import FakeAligner
from narrate.worker.testkit.fake_recognizer import FakeRecognizer


@pytest.mark.parametrize(
    ("method", "names"),
    [
        (Recognizer.transcribe, ("languages", "texts")),
        (MlxRecognizer.transcribe, ("languages", "texts")),
        (FakeRecognizer.transcribe, ("languages", "texts")),
        (Aligner.align, ("texts", "languages")),
        (MlxAligner.align, ("texts", "languages")),
        (FakeAligner.align, ("texts", "languages")),
    ],
)
def test_the_lists_are_keyword_only(method, names):
    params = inspect.signature(method).parameters
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in names), method


def test_a_positional_call_is_refused():
    with pytest.raises(TypeError):
        FakeAligner().align([np.zeros(2400, np.float32)], ["english"], ["The sea."])  # type: ignore[misc]
