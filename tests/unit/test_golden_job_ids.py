"""Today's job ids stay the same: a job's id is a hash of its spec (jobs/api/submit.py ``job_id_for``), and a
submit of the same book after an upgrade must find the job it made before (its checkpoints, its output's
ownership, `already done`). These ids were computed by the code as it was when the request model began to be
consolidated; a change to the spec's fields, their defaults or their JSON must leave them as they are."""

from __future__ import annotations

import pytest
from narrate.jobs.api.submit import job_id_for
from narrate.jobs.book.spec import JobSpec

GOLDEN = [
    ({"document": "d" * 64, "voice": "a" * 64, "output": "book.m4b"}, "narrate-63e353f3a3f56f3dcdb24c1c5153ef69"),
    (
        {
            "document": "e" * 64,
            "voice": "preset:ryan",
            "instruct": "calm",
            "output": "b/one.mp3",
            "model": "org/model",
            "quant": "8bit",
            "seed": 7,
            "max_frames": 99,
            "sentence_pause_ms": 100,
            "lexicon": [["Nguyen", "win"]],
            "loudness": None,
        },
        "narrate-3fb5eae3eee99ca7feb000653a9739bd",
    ),
    (
        {
            "document": "f" * 64,
            "voice": "b" * 64,
            "output": "c.m4b",
            "cast": {"alice": {"voice": "c" * 64, "instruct": None, "seed": 3}},
            "title": "T",
            "series": "S #2",
            "narrator": "N",
            "author": "A",
            "year": "2026",
            "subtitles": "srt,vtt",
            "split": "chapters+book",
            "max_part_hours": 2.5,
        },
        "narrate-053555ffa165e3d011f8a813a7a3ad1c",
    ),
    (
        {
            "document": "0" * 64,
            "voice": "1" * 64,  # a sample (this case said "design" before the spec checked itself when built: no
            "output": "d.epub",  # book is read in a designed voice; its id was computed by the code of that time)
            "proof": "auto",
            "retakes": 3,
            "readalong": "epub",
            "word_timings": "auto",
            "overrides": {"2": {"seed": 5, "text": "Fixed."}},
            "accepted": [4],
            "library": "/lib",
            "abs_url": "http://abs:13378",
        },
        "narrate-625321292279b5a7fe5d2368e9505283",
    ),
]


@pytest.mark.parametrize(("spec", "job_id"), GOLDEN)
def test_a_specs_job_id_is_what_it_was(spec, job_id):
    assert job_id_for(JobSpec(**spec), "narrate") == job_id
    assert job_id_for(JobSpec.from_json(JobSpec(**spec).to_json()), "narrate") == job_id  # read back: the same


def test_the_queue_is_part_of_the_id():
    spec, job_id = GOLDEN[0]
    assert job_id_for(JobSpec(**spec), "other") != job_id
