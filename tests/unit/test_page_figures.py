"""The pages' figures and names, rendered in this process: one spelling of an ETA for the Queue and
Job pages (none once a job ended, no realtime factor where there is none), seconds rounded as the
pages' script rounds them, the Queue page's order, the book's title as a download's file name,
and the voice name pattern as Chromium compiles it (the `v` flag)."""

from __future__ import annotations

import re

import pytest
from narrate.jobs.humanize import clock, duration, whole_seconds
from narrate.jobs.web import views
from narrate.jobs.web.templating import eta, realtime, templates


def job(status: str, eta_s: float | None = None, rtf: float | None = None, **more) -> dict:
    progress = {
        "sentences_done": 3,
        "sentences_total": 9,
        "audio_s": 4.0,
        "realtime_factor": rtf,
        "eta_s": eta_s,
        "chapters": [],
    }
    return {
        "id": f"narrate-{status}",
        "object": "narration",
        "status": status,
        "title": "Harbor",
        "document": "harbor.epub",
        "priority": "normal",
        "voice": "sample 1a2b3c4d",
        "voice_shown": "alice",
        "host": None,
        "scheduled_for": None,
        "error": "it broke" if status == "failed" else None,
        "stopping": False,
        "outputs": [],
        "progress": progress,
        "created_at": None,
        "ended_at": None,
        "duration_s": None,
        **more,
    }


def test_an_eta_is_spelled_one_way_and_only_while_the_job_runs():
    assert eta(job("in_progress", 56)) == "ETA 56 s"
    assert eta(job("in_progress", 77)) == "ETA 1 min 17 s"
    assert eta(job("in_progress", 7625)) == "ETA 2 h 07 min"
    for ended in ("completed", "failed", "cancelled", "queued", "scheduled"):
        assert eta(job(ended, 0)) is None, ended
    assert eta(job("in_progress", None)) is None
    assert realtime(job("in_progress", 5, 1.5)) == "1.50× realtime"
    assert realtime(job("failed")) is None


def render(name: str, **context) -> str:
    return templates().env.get_template(name).render(path="/", signed_in=False, **context)


def figures(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_queue_rows_and_the_job_page_show_the_same_eta_and_none_once_ended():
    running = job("in_progress", 77, 1.25)
    assert "ETA 1 min 17 s" in figures(render("_rows.html", jobs=[running]))
    page = render("job.html", job=running, audio=None, terminal=False)
    assert re.search(r'data-field="eta">ETA 1 min 17 s<', page) and "1.25× realtime" in page
    for ended in ("completed", "failed", "cancelled"):
        shown = figures(render("job.html", job=job(ended, 0), audio=None, terminal=True))
        assert "ETA" not in shown and "realtime" not in shown and "–" not in shown, (ended, shown)
        assert "ETA" not in figures(render("_rows.html", jobs=[job(ended, 0)])), ended


def test_seconds_round_half_up_as_the_pages_script_rounds_them():
    assert [whole_seconds(s) for s in (0.5, 1.5, 2.5, 59.5, -3)] == [1, 2, 3, 60, 0]
    assert duration(2.5, spelled=True) == "3 s" and duration(59.5) == "1m00s" and clock(0.5) == "0:00:01"
    assert duration(None) == "-"


def row(job_id: str, status: str, scheduled_for: str | None = None) -> dict:
    return {"id": job_id, "status": status, "scheduled_for": scheduled_for}


def test_the_queue_page_lists_what_runs_then_what_waits_then_the_scheduled_then_the_ended():
    newest_first = [
        row("done-new", "completed"),
        row("later", "scheduled", "2026-12-01T03:00:00+00:00"),
        row("low", "queued"),
        row("sooner", "scheduled", "2026-12-01T02:00:00+00:00"),
        row("high", "queued"),
        row("failed-old", "failed"),
        row("running", "in_progress"),
        row("book", "queued"),
    ]
    waiting = ["high", "low"]  # as a worker takes them: the high queue first, each in its order
    assert [r["id"] for r in views.ordered(newest_first, waiting)] == [
        "running",
        "high",
        "low",
        "book",
        "sooner",
        "later",
        "done-new",
        "failed-old",
    ]


@pytest.mark.parametrize(
    ("title", "stem", "name", "saved"),
    [
        ("Harbor", "harbor-11d97576cb", "harbor-11d97576cb.m4b", "Harbor.m4b"),
        ("The Odyssey: Book One", "odyssey-0a1b2c3d4e", "odyssey-0a1b2c3d4e.srt", "The Odyssey Book One.srt"),
        ("Harbor", "harbor-11d97576cb", "harbor-11d97576cb/01 - Dawn.mp3", "Harbor - 01 - Dawn.mp3"),
        ("Harbor", "harbor-11d97576cb", "harbor-11d97576cb - Part 2.mp3", "Harbor - Part 2.mp3"),
        ('a/b\\c "quoted" <x>\n\x00', "s", "s.mp3", "a b c quoted x.mp3"),
        ("../..", "s", "s.mp3", "narration.mp3"),
        ("x" * 300, "s", "s.mp3", "x" * 120 + ".mp3"),
    ],
)
def test_a_download_is_named_by_the_books_title(title, stem, name, saved):
    assert views.download_name(title, stem, name) == saved


def test_the_voice_name_pattern_is_valid_with_the_v_flag_and_matches_what_the_server_takes():
    # Chromium compiles `pattern` as new RegExp(`^(?:${pattern})$`, "v"): a class's "-" is escaped there.
    in_class = [re.sub(r"\w-\w", "", c.replace("\\-", "")) for c in re.findall(r"\[([^\]]*)\]", views.NAME_PATTERN)]
    assert in_class and all("-" not in c for c in in_class), views.NAME_PATTERN  # only ranges (A-Z) use a bare -
    from narrate.jobs.voices.names import is_name

    for name in ("alice", "Good-name_2", "a", "x" * 64, "bad name!", "-lead", "_lead", "x" * 65, ""):
        assert bool(re.fullmatch(views.NAME_PATTERN, name)) == is_name(name), name


def test_a_job_id_rq_would_refuse_is_no_narration():
    from narrate.jobs.errors import JobNotFound

    assert views.check_id("narrate-0a1b_c-2") == "narrate-0a1b_c-2"
    for bad in ("narrate-Call 0800 123", "narrate-a/b", "narrate-", "narrate-é", "narrate-" + "a" * 200):
        with pytest.raises(JobNotFound):
            views.check_id(bad)


def test_a_narrations_title_is_its_given_title_else_the_documents_else_its_file_name():
    import redis
    from rq.job import Job
    from rq.serializers import JSONSerializer

    def made(spec: dict, description: str, document: str) -> Job:  # never saved: no server is asked
        return Job.create(
            "narrate.jobs.task.job.run",
            args=(spec,),
            connection=redis.Redis(port=1),
            serializer=JSONSerializer,
            description=description,
            meta={"document": document},
        )

    described = "narrate The (Odyssey) (6 sentences) -> narrations/odyssey-0a1b2c3d4e.mp3"
    assert views.title_of(made({"document": "d", "title": "Given"}, described, "odyssey.epub")) == "Given"
    assert views.title_of(made({"document": "d"}, described, "odyssey.epub")) == "The (Odyssey)"
    assert views.title_of(made({"document": "d"}, "", "art2.txt")) == "art2"
