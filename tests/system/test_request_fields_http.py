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
    [("sentence_pause_ms", "-5"), ("paragraph_pause_ms", "99999999"), ("seed", "abc"), ("max_frames", "0"),
     ("max_part_hours", "0"), ("year", "soon"), ("loudness", "-99"), ("quant", "3bit"), ("split", "pages"),
     ("subtitles", "ass"), ("fan_out", "often"), ("chapters", "x-y")],
)  # fmt: skip
def test_a_bad_field_is_named_as_the_form_spells_it(served, voice_wav, field, value):
    with open(voice_wav, "rb") as f:
        answer = served.post("/v1/narrations", data={"text": TEXT, field: value}, files={"voice_sample": f})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == field, error
    assert "--" not in error["message"], error
    listed = served.get("/v1/narrations").json()
    assert listed["data"] == [], listed  # nothing enqueued


def test_the_schema_shows_the_models_bounds(served):
    form = served.get("/openapi.json").json()["paths"]["/v1/narrations"]["post"]["requestBody"]["content"]
    props = form["multipart/form-data"]["schema"]["properties"]
    assert (props["sentence_pause_ms"]["minimum"], props["sentence_pause_ms"]["maximum"]) == (0, 60000)
    assert props["max_frames"]["minimum"] == 1 and props["split"]["enum"] == ["chapters", "chapters+book"]
    assert "Silence between sentences" in props["sentence_pause_ms"]["description"]
