"""`narrate schedule add|list|remove|run`: what a tick submits (new and changed documents, once),
where the outputs go, and bad input refused with one line and nothing stored."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from conftest import narrate, wait_for_job
from faults import book
from narrate.jobs.schedules.definitions import summary
from schedtools import add, cli, docs, listing, queued, run_tick, sched_env, write_docs


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


def test_outputs_default_to_the_output_root_as_mp3(env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    add(e, "plain", home / "w", voice_wav)
    [sub] = run_tick(e, "plain")["submitted"]
    assert sub["output"] == str(home / "out" / "doc0000.mp3")


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


@pytest.mark.parametrize(
    "case",
    ["bad cron", "never", "no folder", "folder is a file", "unreadable folder", "no voice", "voice not audio",
     "bad name", "bad format", "bad quant", "output outside root", "output is a file", "bad zone"],
)  # fmt: skip
def test_bad_schedules_are_refused_with_one_line(case, env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    watch = home / "w"
    write_docs(watch, 1)
    args = {"name": "s", "--cron": "0 2 * * *", "--watch": str(watch), "--voice": str(voice_wav)}
    extra: list[str] = []
    if case == "bad cron":
        args["--cron"] = "0 25 * * *"
    elif case == "never":
        args["--cron"] = "0 2 31 2 *"
    elif case == "no folder":
        args["--watch"] = str(home / "missing")
    elif case == "folder is a file":
        args["--watch"] = str(watch / "doc0000.txt")
    elif case == "unreadable folder":
        watch.chmod(0)
    elif case == "no voice":
        args["--voice"] = str(home / "gone.wav")
    elif case == "voice not audio":
        args["--voice"] = str(watch / "doc0000.txt")
    elif case == "bad name":
        args["name"] = "../etc"
    elif case == "bad format":
        extra = ["--format", "docx"]
    elif case == "bad quant":
        extra = ["--quant", "3bit"]
    elif case == "output outside root":
        extra = ["-o", "/tmp"]
    elif case == "output is a file":
        (home / "out" / "a-file").write_text("")
        extra = ["-o", str(home / "out" / "a-file")]
    elif case == "bad zone":
        extra = ["--tz", "Mars/Olympus"]
    name = args.pop("name")
    proc = cli(e, "schedule", "add", name, *[x for kv in args.items() for x in kv], *extra)
    watch.chmod(0o755)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    expected = {
        "bad cron": "is not valid", "never": "never names a time", "no folder": "does not exist",
        "folder is a file": "is not a folder", "unreadable folder": "cannot be read", "no voice": "does not exist",
        "voice not audio": "is not audio", "bad name": "is not valid", "bad format": "unknown format",
        "bad quant": "unknown quantization", "output outside root": "outside the output root",
        "output is a file": "is not a writable directory",
        "bad zone": "unknown time zone",
    }[case]  # fmt: skip
    assert expected in lines[0]
    assert stored(external_redis) == []


def test_unknown_schedule_names_and_a_second_add(env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    for command in ("run", "remove"):
        proc = narrate(e, "schedule", command, "nope")
        assert (
            proc.returncode == 1 and proc.stderr.strip() == "Error: no schedule named 'nope'; see narrate schedule list"
        )
    add(e, "twice", home / "w", voice_wav)
    proc = narrate(e, "schedule", "add", "twice", "--cron", "@daily", "--watch", str(home / "w"), "--voice",
                   str(voice_wav))  # fmt: skip
    assert proc.returncode == 1 and "schedule 'twice' exists" in proc.stderr
    assert listing(e)["schedules"][0]["cron"] == "0 2 * * *"  # the first one, untouched


def test_the_voice_is_kept_while_a_schedule_uses_it(env, home, voice_wav, external_redis):
    """Two schedules with one voice share its stored copy; it goes with the last of them."""
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    add(e, "a", home / "w", voice_wav)
    add(e, "b", home / "w", voice_wav, "-o", str(home / "out" / "b"))
    voices = external_redis.keys("narrate:schedule-voice:*")
    assert len(voices) == 1
    assert narrate(e, "schedule", "remove", "a").returncode == 0
    assert external_redis.keys("narrate:schedule-voice:*") == voices
    assert run_tick(e, "b")["submitted"]
    assert narrate(e, "schedule", "remove", "b").returncode == 0
    assert stored(external_redis) == []


def test_a_watched_folder_takes_every_format_narrate_reads(env, home, voice_wav, external_redis):
    """EPUB, HTML and PDF books dropped in the folder are submitted like text (read by their reader)."""
    from bookfiles import make_epub3, make_text_pdf

    e = sched_env(env, home)
    watch = home / "inbox"
    watch.mkdir()
    make_epub3(watch / "keeper.epub")
    make_text_pdf(watch / "report.pdf")
    (watch / "page.html").write_text("<html><body><h1>Page</h1><p>A page of text to read.</p></body></html>")
    add(e, "formats", watch, voice_wav)
    report = run_tick(e, "formats")
    assert sorted(d["document"] for d in report["submitted"]) == ["keeper.epub", "page.html", "report.pdf"], report
    assert report.get("skipped", []) in ([], 0), report
