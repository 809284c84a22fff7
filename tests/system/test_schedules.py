"""`narrate schedule add|list|remove|run`: what a tick submits (new and changed documents, once),
where the outputs go, and bad input refused with one line and nothing stored."""

from __future__ import annotations

import os
import shutil
import time

from helpers.books import book, write_docs
from helpers.procs import narrate, wait_for_job
from helpers.sched import add, docs, listing, queued, run_tick, sched_env
from narrate.jobs.schedules.definitions import summary


def stored(r) -> list[bytes]:
    return sorted(r.keys("narrate:schedule*"))


def test_a_tick_submits_new_and_changed_documents_once(env, home, voice_wav, external_redis):
    """New documents are submitted (outputs named after them, in -o with --format's extension); an
    unchanged or merely touched one never again; a changed one again; the jobs run on a worker."""
    e = sched_env(env, home)
    watch = home / "inbox"
    paths = write_docs(watch, 3)
    (watch / "notes.md").write_text("# Notes\n\nA markdown file is a document too.")
    (watch / "cover.jpg").write_bytes(b"\xff\xd8 not a document")
    (watch / ".draft.txt").write_text("Hidden files are not documents.")
    voice = home / "me.wav"
    shutil.copy(voice_wav, voice)
    add(e, "nightly", watch, voice, "-o", str(home / "out" / "audio"), "--format", "m4b")
    voice.unlink()  # the schedule keeps its own copy
    report = run_tick(e, "nightly")
    got = sorted((d["document"], d["output"]) for d in report["submitted"])
    want = [(p.name, str(home / "out" / "audio" / f"{p.stem}.m4b")) for p in [*paths, watch / "notes.md"]]
    assert got == sorted(want)
    assert len(queued(external_redis)) == 4
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    for d in report["submitted"]:
        assert wait_for_job(d["job"])["status"] == "finished"
        assert os.path.getsize(d["output"]) > 0
    again = run_tick(e, "nightly")
    assert again["submitted"] == [] and again["unchanged"] == 4
    os.utime(paths[0])  # touched, same content
    paths[1].write_text(book(4, "second version"))
    os.utime(paths[1], (time.time() - 60, time.time() - 60))
    third = run_tick(e, "nightly")
    assert [d["document"] for d in third["submitted"]] == [paths[1].name] and third["unchanged"] == 3
    assert third["submitted"][0]["job"] != docs(external_redis, "nightly")[paths[0].name]["job"]
    view = listing(e)["schedules"][0]
    assert view["name"] == "nightly" and view["cron"] == "0 2 * * *" and view["runs"] == 3
    assert view["next_run"] > time.time() and view["narrated"] == 4
    assert [d["document"] for d in view["last_run"]["submitted"]] == [paths[1].name]
    text = narrate(e, "schedule", "list")
    assert text.returncode == 0 and "nightly: 0 2 * * *" in text.stdout and "next run:" in text.stdout
    assert f"submitted: {paths[1].name} -> " in text.stdout
    [row] = summary(external_redis)  # what `narrate info` shows
    assert row["name"] == "nightly" and row["submitted"] == 1 and row["skipped"] == 0 and row["last_run"] != "never"
    assert narrate(e, "schedule", "remove", "nightly").returncode == 0
    assert stored(external_redis) == [] and len(queued(external_redis)) == 1  # the jobs it submitted stay


def test_a_document_still_being_written_waits(env, home, voice_wav, external_redis):
    """Modified in the last NARRATE_SCHEDULE_SETTLE_S seconds: it waits for the next tick; a file
    dated in the future (another host's clock) waits until it has stayed unchanged that long."""
    e = sched_env(env, home, settle_s=4)  # room for the tick's own start on a loaded machine
    watch = home / "w"
    [fresh, future] = write_docs(watch, 2)
    later = time.time() + 86400
    os.utime(future, (later, later))
    add(e, "late", watch, voice_wav)
    os.utime(fresh)  # written just now
    first = run_tick(e, "late")
    assert first["submitted"] == []
    assert sorted(w["document"] for w in first["waiting"]) == [fresh.name, future.name]
    assert "still being written" in first["waiting"][0]["reason"]
    assert "still being written" in listing(e)["schedules"][0]["last_run"]["waiting"][0]["reason"]
    time.sleep(4.1)
    second = run_tick(e, "late")
    assert sorted(d["document"] for d in second["submitted"]) == [fresh.name, future.name]
