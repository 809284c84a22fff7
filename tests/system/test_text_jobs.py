"""--lexicon and --language through real narrate processes: validated at submit, stored in the job,
the spoken text and the language reach the engine, and a changed lexicon entry re-renders exactly
the sentences it affects."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job


def spoken(home: Path) -> list[dict]:
    log = home / "text.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_changed_lexicon_entry_resynthesizes_exactly_the_sentence_it_touches(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0, NARRATE_FAKE_TEXT_LOG=str(home / "text.log"))
    doc = home / "names.txt"
    doc.write_text("Nguyen paid $3.50 on Monday.\n\nSmith stayed home.\n")
    lexicon = home / "lexicon.txt"
    lexicon.write_text("# names\nNguyen = Win\n")
    out = home / "out" / "names.wav"
    first = submit(e, doc, voice_wav, out, "--lexicon", str(lexicon))
    out.write_bytes(b"not narrate's")  # the first job fails right before writing: its checkpoints stay
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(first)["status"] == "failed"
    said = spoken(home)
    assert [s["text"] for s in said] == ["Win paid three dollars fifty on Monday.", "Smith stayed home."]
    assert {s["language"] for s in said} == {"english"}  # detected, and told to the engine
    out.unlink()
    lexicon.write_text("Nguyen = Nwen\n")
    second = submit(e, doc, voice_wav, out, "--lexicon", str(lexicon))
    assert second != first  # the lexicon is part of the job
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(second)
    assert st["status"] == "finished", st
    assert [s["text"] for s in spoken(home)[len(said) :]] == ["Nwen paid three dollars fifty on Monday."]
    assert st["result"]["synthesized"] == 1 and st["result"]["sentences"] == 2


def test_language_flag_reaches_the_engine(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0, NARRATE_FAKE_TEXT_LOG=str(home / "text.log"))
    doc = home / "de.txt"
    doc.write_text("Er kam mit 2 Hunden. Sie blieben.\n")
    job = submit(e, doc, voice_wav, home / "out" / "de.wav", "--language", "German")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job)["status"] == "finished"
    said = spoken(home)
    assert [s["text"] for s in said] == ["Er kam mit zwei Hunden.", "Sie blieben."]
    assert {s["language"] for s in said} == {"german"}


MIXED_HTML = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Letters</title></head>
<body lang="en"><h1>Letters</h1><p>She opened the letter and read it aloud.</p>
<blockquote lang="fr"><p>Le 1er mai, il est arrivé. Il a 21 ans.</p></blockquote>
<p>He said <i lang="fr">bonjour</i> on the 2nd day.</p>
<div xml:lang="de"><p>Am 3. Mai kam er mit 2 Hunden.</p></div><p lang="tlh">Qapla' is a word.</p></body></html>"""


def test_passages_marked_in_another_language_are_read_in_it(env, home, voice_wav, external_redis):
    """A lang attribute on a block inside the body: that passage is split, normalized and spoken
    in its language; an inline one (a word in italics) is not a passage; a language the model
    does not speak, and the body's own lang, leave the document's."""
    e = fake_env(env, home, delay_ms=0, NARRATE_FAKE_TEXT_LOG=str(home / "text.log"))
    doc = home / "letters.html"
    doc.write_text(MIXED_HTML)
    job = submit(e, doc, voice_wav, home / "out" / "letters.wav")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job)["status"] == "finished"
    said = [(s["language"], s["text"]) for s in spoken(home)]
    assert sorted(said, key=lambda x: x[1]) == sorted(
        [
            ("english", "Letters"),
            ("english", "She opened the letter and read it aloud."),
            ("french", "Le premier mai, il est arrivé."),
            ("french", "Il a vingt et un ans."),
            ("english", "He said bonjour on the second day."),
            ("german", "Am dritten Mai kam er mit zwei Hunden."),
            ("english", "Qapla' is a word."),
        ],
        key=lambda x: x[1],
    )
    # --language sets the document's language; marked passages keep theirs.
    job = submit(e, doc, voice_wav, home / "out" / "letters-it.wav", "--language", "it")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job)["status"] == "finished"
    again = {s["text"]: s["language"] for s in spoken(home)[len(said) :]}
    assert again["She opened the letter and read it aloud."] == "italian"
    # The French and German passages are the same sentences in the same language: reused from the cache.
    assert "Le premier mai, il est arrivé." not in again and "Am dritten Mai kam er mit zwei Hunden." not in again


def test_a_schedule_reads_with_its_language_and_lexicon(env, home, voice_wav, external_redis):
    """`schedule add --language --lexicon`: the lexicon is read once, when the schedule is added (a
    tick may run on another host); every document of the folder is read in that language with it."""
    from helpers.sched import add, listing, run_tick

    e = fake_env(env, home, delay_ms=0, NARRATE_FAKE_TEXT_LOG=str(home / "text.log"), NARRATE_SCHEDULE_SETTLE_S="0")
    watch = home / "inbox"
    watch.mkdir()
    (watch / "brief.txt").write_text("Nguyen kam mit 2 Hunden.\n")
    lexicon = home / "lex.txt"
    lexicon.write_text("Nguyen = Win\n")
    add(e, "de", watch, voice_wav, "--language", "German", "--lexicon", str(lexicon))
    lexicon.unlink()  # kept with the schedule
    view = listing(e)["schedules"][0]
    assert (view["language"], view["lexicon_entries"]) == ("de", 1)
    [job] = [d["job"] for d in run_tick(e, "de")["submitted"]]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job)["status"] == "finished"
    said = spoken(home)
    assert [s["text"] for s in said] == ["Win kam mit zwei Hunden."]
    assert {s["language"] for s in said} == {"german"}
    bad = narrate(
        e,
        "schedule",
        "add",
        "x",
        "--cron",
        "@daily",
        "--watch",
        str(watch),
        "--voice",
        str(voice_wav),
        "--language",
        "klingon",
    )
    assert bad.returncode != 0 and "unknown language 'klingon'" in bad.stderr
