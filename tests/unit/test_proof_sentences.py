"""The proof pass sentence by sentence as a job's result keeps it (jobs/proof/report.py): which sentences are
listed (first take flagged), in what order and how many at most, what each says; the counts as the report and
`narrate status` word them (jobs/api/proof_report.py); `narrate proof`'s text and CSV (cli/proof.py); a place in the
book to the tenth of a second (jobs/humanize.py)."""

from __future__ import annotations

import csv
import io

from narrate.cli.proof import CSV_COLUMNS, text_lines, write_csv
from narrate.jobs.api.proof_report import counts_of, summary_line
from narrate.jobs.humanize import moment
from narrate.jobs.proof import report
from narrate.jobs.proof.report import Place
from narrate.jobs.proof.takes import Counts, Record, Take
from narrate.jobs.proof.verdict import judge

SENTENCE = "The quick brown fox jumps over the lazy dog."


def take(heard: str, seed: int = 7) -> Take:
    return Take(seed, judge(SENTENCE, heard, None))


def records() -> dict[int, Record]:
    ok = Record("m", [take(SENTENCE)], final=True)
    fixed = Record("m", [take("the quick fox jumps over the lazy dog", 1), take(SENTENCE, 2)], kept=1, final=True)
    still = Record("m", [take("the quick brown fox", 3), take("the quick brown fox jumps", 4)], kept=1, final=True)
    unheard = Record("m")
    return {0: ok, 1: fixed, 2: ok, 3: still, 4: unheard}


def test_only_the_sentences_whose_first_take_was_flagged_are_listed_in_reading_order():
    written = [f"Sentence {i} as written." for i in range(5)]
    spoken = [SENTENCE] * 5
    places = {1: Place(1.25, 3.5, 1, "One"), 3: Place(3600.04, 3601.5, 2, "Two")}
    listed, left_out = report.sentences(records(), written, spoken, places)
    assert [s["index"] for s in listed] == [1, 3] and left_out == 0
    fixed, still = listed
    assert fixed == {
        "index": 1,
        "chapter": 1,
        "chapter_title": "One",
        "start_s": 1.25,
        "end_s": 3.5,
        "text": "Sentence 1 as written.",
        "spoken": SENTENCE,
        "transcript": SENTENCE,
        "outcome": "fixed",
        "reasons": [],
        "flagged_for": ["dropped"],
        "problem": "fixed by take 2 of 2; take 1: dropped 'brown'",
        "kept": 1,
        "takes": [
            {
                "seed": 1,
                "ok": False,
                "reasons": ["dropped"],
                "said": "dropped 'brown'",
                "wer": 0.1111,
                "transcript": "the quick fox jumps over the lazy dog",
                "kept": False,
            },
            {
                "seed": 2,
                "ok": True,
                "reasons": [],
                "said": "ok (wer 0.00)",
                "wer": 0.0,
                "transcript": SENTENCE,
                "kept": True,
            },
        ],
    }
    assert still["outcome"] == "still_flagged" and still["transcript"] == "the quick brown fox jumps"
    assert still["reasons"] == ["wer", "dropped", "ending"] and still["problem"].startswith("wer 0.44, dropped")
    assert [t["kept"] for t in still["takes"]] == [False, True]
    [unplaced], _ = report.sentences({3: records()[3]}, written, spoken, {})
    assert (unplaced["chapter"], unplaced["start_s"], unplaced["end_s"]) == (None, None, None)


def test_a_result_lists_at_most_its_limit_the_still_flagged_first():
    r = records()
    many = {i: r[1] if i % 2 else r[3] for i in range(10)}  # odd: fixed, even: still flagged
    listed, left_out = report.sentences(many, [""] * 10, [""] * 10, {}, limit=7)
    assert left_out == 3 and [s["index"] for s in listed] == [0, 1, 2, 3, 4, 6, 8]  # 5 still flagged, 2 fixed


def test_the_counts_in_words():
    counts = Counts.of(records().values()).to_json()
    done = counts_of({"model": "org/asr", **counts}, complete=True)
    assert done["fixed"] == 1 and done["still_flagged"] == 1
    assert summary_line(done) == (
        "4 checked, 2 flagged, 2 retaken (2 retakes), 1 fixed, 1 still flagged (dropped 1, ending 1, wer 1) by org/asr"
    )
    running = counts_of({"model": "org/asr", "checked": 3, "flagged": 1}, complete=False)
    assert running["fixed"] is None and summary_line(running) == "3 checked, 1 flagged, 0 still flagged by org/asr"
    assert summary_line(counts_of({}, complete=False)) == "not heard yet"


def test_a_place_in_the_book_to_the_tenth():
    assert [moment(s) for s in (0, 1.25, 61.04, 3600.04, 3725.96, None)] == [
        "0:00.0",
        "0:01.3",
        "1:01.0",
        "1:00:00.0",
        "1:02:06.0",
        "-",
    ]


def rep_of(listed: list[dict], complete: bool = True) -> dict:
    return {
        "id": "narrate-x",
        "status": "finished" if complete else "started",
        "complete": complete,
        **counts_of({"model": "org/asr", **Counts.of(records().values()).to_json()}, complete),
        "sentences": listed if complete else [],
        "sentences_left_out": 0,
    }


def test_narrate_proof_as_text_and_csv(capsys):
    written = ["", "Line\none\x1b[31m.", "", "Sentence 3.", ""]
    listed, _ = report.sentences(records(), written, [SENTENCE] * 5, {1: Place(61.0, 62.5, 1, "One")})
    lines = text_lines(rep_of(listed))
    assert lines[0].startswith("narrate-x: finished; proof: 4 checked, 2 flagged")
    assert lines[2] == "fixed: sentence 2, chapter 1 (One), at 1:01.0-1:02.5"
    assert lines[3] == "  text:   Line\\none\\x1b[31m."  # one printable line, whatever the document holds
    assert lines[4] == f"  spoken: {SENTENCE}"  # said otherwise than written
    assert lines[6:9] == [
        "  wrong:  fixed by take 2 of 2; take 1: dropped 'brown'",
        "  take 1: seed 1, dropped 'brown'",
        "  take 2: seed 2, ok (wer 0.00)  (kept)",
    ]
    assert lines[10] == "still flagged: sentence 4"  # counted from 1, as narrate redo takes it
    assert text_lines(rep_of([], complete=False))[1] == "the flagged sentences are listed once the job has finished"
    assert text_lines(rep_of([]))[1] == "no sentence was flagged"

    write_csv(rep_of(listed))
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 3
    row = dict(zip(CSV_COLUMNS, rows[1], strict=True))
    assert row["text"] == "Line\none\x1b[31m." and row["start_s"] == "61.0" and row["seeds"] == "1 2"
    assert row["take_verdicts"] == "dropped 'brown' | ok (wer 0.00)" and row["kept_take"] == "2"
    assert (row["sentence"], row["index"]) == ("2", "1")
    assert rows[2][CSV_COLUMNS.index("chapter")] == "" and rows[2][CSV_COLUMNS.index("start_s")] == ""
