"""`narrate schedule add|list|remove|run` in this process: bad schedules refused with one line
and nothing stored, unknown names and a second add, where a tick's outputs go, the voice kept while
a schedule uses it, and every format narrate reads taken from a watched folder."""

from __future__ import annotations

import pytest
from helpers.books import write_docs
from helpers.cli import invoke
from helpers.procs import narrate
from helpers.sched import add, listing, run_tick, sched_env


def stored(r) -> list[bytes]:
    return sorted(r.keys("narrate:schedule*"))


def test_outputs_default_to_the_output_root_as_mp3(env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    add(e, "plain", home / "w", voice_wav, run=invoke)
    [sub] = run_tick(e, "plain", run=invoke)["submitted"]
    assert sub["output"] == str(home / "out" / "doc0000.mp3")


@pytest.mark.parametrize(
    "case",
    [
        "bad cron",
        "never",
        "no folder",
        "folder is a file",
        "unreadable folder",
        "no voice",
        "voice not audio",
        "bad name",
        "bad format",
        "bad quant",
        "output outside root",
        "output is a file",
        "bad zone",
    ],
)
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
    argv = ["schedule", "add", name, *[x for kv in args.items() for x in kv], *extra]
    # root reads a folder of mode 000 anyway: that case runs in a process without root's power to read it
    proc = narrate(e, *argv, as_user=True) if case == "unreadable folder" else invoke(e, *argv)
    watch.chmod(0o755)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    expected = {
        "bad cron": "is not valid",
        "never": "never names a time",
        "no folder": "does not exist",
        "folder is a file": "is not a folder",
        "unreadable folder": "cannot be read",
        "no voice": "does not exist",
        "voice not audio": "is not audio",
        "bad name": "is not valid",
        "bad format": "unknown format",
        "bad quant": "--quant '3bit': use",
        "output outside root": "outside the output root",
        "output is a file": "is not a writable directory",
        "bad zone": "unknown time zone",
    }[case]
    assert expected in lines[0]
    assert stored(external_redis) == []


def test_unknown_schedule_names_and_a_second_add(env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    for command in ("run", "remove"):
        proc = invoke(e, "schedule", command, "nope")
        assert (
            proc.returncode == 1 and proc.stderr.strip() == "Error: no schedule named 'nope'; see narrate schedule list"
        )
    add(e, "twice", home / "w", voice_wav, run=invoke)
    proc = invoke(
        e, "schedule", "add", "twice", "--cron", "@daily", "--watch", str(home / "w"), "--voice", str(voice_wav)
    )
    assert proc.returncode == 1 and "schedule 'twice' exists" in proc.stderr
    assert listing(e, run=invoke)["schedules"][0]["cron"] == "0 2 * * *"  # the first one, untouched


def test_the_voice_is_kept_while_a_schedule_uses_it(env, home, voice_wav, external_redis):
    """Two schedules with one voice share its stored copy; it goes with the last of them."""
    e = sched_env(env, home)
    write_docs(home / "w", 1)
    add(e, "a", home / "w", voice_wav, run=invoke)
    add(e, "b", home / "w", voice_wav, "-o", str(home / "out" / "b"), run=invoke)
    voices = external_redis.keys("narrate:schedule-voice:*")
    assert len(voices) == 1
    assert invoke(e, "schedule", "remove", "a").returncode == 0
    assert external_redis.keys("narrate:schedule-voice:*") == voices
    assert run_tick(e, "b", run=invoke)["submitted"]
    assert invoke(e, "schedule", "remove", "b").returncode == 0
    assert stored(external_redis) == []


def test_a_watched_folder_takes_every_format_narrate_reads(env, home, voice_wav, external_redis):
    """EPUB, HTML and PDF books dropped in the folder are submitted like text (read by their reader)."""
    from helpers.books import make_epub3, make_text_pdf

    e = sched_env(env, home)
    watch = home / "inbox"
    watch.mkdir()
    make_epub3(watch / "keeper.epub")
    make_text_pdf(watch / "report.pdf")
    (watch / "page.html").write_text("<html><body><h1>Page</h1><p>A page of text to read.</p></body></html>")
    add(e, "formats", watch, voice_wav, run=invoke)
    report = run_tick(e, "formats", run=invoke)
    assert sorted(d["document"] for d in report["submitted"]) == ["keeper.epub", "page.html", "report.pdf"], report
    assert report.get("skipped", []) in ([], 0), report


def test_list_shows_every_option_a_schedule_holds(env, home, voice_wav, external_redis):
    """Every option `schedule add --help` offers is kept and shown by `schedule list`, text and JSON: those the
    defaults leave out of a request's JSON (feed, library, proof, read-along, word timings, seed, frame cap) made
    it crash with a KeyError before."""
    e = sched_env(env, home)
    (home / "w").mkdir()
    add(
        e,
        "full",
        home / "w",
        voice_wav,
        "--feed",
        "news",
        "--library",
        str(home / "out" / "lib"),
        "--layout",
        "flat",
        "--abs-url",
        "http://127.0.0.1:13378",
        "--proof",
        "--retakes",
        "2",
        "--readalong",
        "epub",
        "--word-timings",
        "--seed",
        "7",
        "--max-frames",
        "9",
        "--sentence-pause",
        "400",
        run=invoke,
    )
    [shown] = listing(e, run=invoke)["schedules"]
    opts = shown["options"]
    assert opts["feed"] == "news" and opts["proof"] and opts["retakes"] == 2 and opts["word_timings"]
    assert opts["seed"] == 7 and opts["max_frames"] == 9 and opts["library"]
    text = invoke(e, "schedule", "list")
    assert text.returncode == 0, text.stderr
    assert "feed news" in text.stdout and "seed 7" in text.stdout


def test_add_does_not_offer_chapters():
    """A schedule reads every document of a folder; --chapters picks chapters of one: not offered, not refused."""
    proc = invoke({}, "schedule", "add", "--help")
    assert proc.returncode == 0 and "--chapters" not in proc.stdout
