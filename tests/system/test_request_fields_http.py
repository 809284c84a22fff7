"""The request model on the HTTP API of a real `narrate serve`: a bad value of any option field is a
400 whose `param` and message name the field as the form spells it (sentence_pause_ms, not the CLI's
--sentence-pause), nothing is enqueued, and /openapi.json shows the model's bounds."""

from __future__ import annotations

import pytest
from helpers.web import serve

TEXT = "A short document. It has two sentences."


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sentence_pause_ms", "-5"),
        ("paragraph_pause_ms", "99999999"),
        ("seed", "abc"),
        ("max_frames", "0"),
        ("max_part_hours", "0"),
        ("year", "soon"),
        ("loudness", "-99"),
        ("quant", "3bit"),
        ("split", "pages"),
        ("subtitles", "ass"),
        ("fan_out", "often"),
        ("chapters", "x-y"),
    ],
)
def test_a_bad_field_is_named_as_the_form_spells_it(served, voice_wav, field, value):
    with open(voice_wav, "rb") as f:
        answer = served.post("/v1/narrations", data={"text": TEXT, field: value}, files={"voice_sample": f})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == field, error
    assert "--" not in error["message"], error
    listed = served.get("/v1/narrations").json()
    assert listed["data"] == [], listed  # nothing enqueued


@pytest.mark.parametrize(
    ("given", "param", "says"),
    [
        ({"readalong": "manifest", "split": "chapters"}, "readalong", "not with split chapters"),
        ({"format": "bogus"}, "format", "format 'bogus': use"),
        ({"markup": "bogus"}, "markup", "markup 'bogus': use"),
        ({"in": "abc"}, "in", "in 'abc' is not a delay"),
        ({"at": "abc"}, "at", "at 'abc' is not a date and time"),
        ({"dialogue_voice": "nosuch"}, "dialogue_voice", "dialogue_voice 'nosuch'"),
        ({"language": "klingon"}, "language", "unknown language 'klingon'"),
        ({"feed": "bad/name"}, "feed", "feed name 'bad/name' is not valid"),
        ({"format": "epub", "split": "chapters+book"}, "split", "an EPUB output (format epub)"),
    ],
)
def test_every_part_of_the_request_is_named_when_refused(served, voice_wav, given, param, says):
    """The fields outside the option model too (format, markup, at, in, dialogue_voice), and what two fields
    refuse together (the one the message is about)."""
    with open(voice_wav, "rb") as f:
        answer = served.post("/v1/narrations", data={"text": TEXT, **given}, files={"voice_sample": f})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and says in error["message"] and "--" not in error["message"], error
    assert served.get("/v1/narrations").json()["data"] == []


def test_the_schema_shows_the_models_bounds(served):
    form = served.get("/openapi.json").json()["paths"]["/v1/narrations"]["post"]["requestBody"]["content"]
    props = form["multipart/form-data"]["schema"]["properties"]
    assert (props["sentence_pause_ms"]["minimum"], props["sentence_pause_ms"]["maximum"]) == (0, 60000)
    assert props["max_frames"]["minimum"] == 1 and props["split"]["enum"] == ["chapters", "chapters+book"]
    assert "Silence between sentences" in props["sentence_pause_ms"]["description"]
