"""Bad output options (loudness, subtitles, cover, parts, a subtitle file narrate did not write) are
one-line errors and nothing is queued."""

from __future__ import annotations

from helpers.cli import invoke
from helpers.fake import fake_env


def test_bad_output_options_are_one_line_errors_and_nothing_is_queued(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "d.txt"
    doc.write_text("One. Two.")
    (home / "out").mkdir(exist_ok=True)
    (home / "out" / "mine.srt").write_text("not narrate's")
    notimage = home / "x.jpg"
    notimage.write_text("hello")
    for extra, says in (
        (("--loudness", "loud"), "--loudness"),
        (("--subtitles", "srt,ass"), "subtitle format"),
        (("--cover", str(notimage)), "not a JPEG or PNG"),
        (("--max-part-hours", "0"), "--max-part-hours"),
        (("--subtitles", "srt", "-o", str(home / "out" / "mine.mp3")), "mine.srt exists and was not written"),
    ):
        args = ("-o", str(home / "out" / "d.mp3"), *extra) if "-o" not in extra else extra
        proc = invoke(e, "submit", str(doc), "--voice", str(voice_wav), *args)
        assert proc.returncode != 0 and proc.stderr.startswith("Error: ") and says in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert invoke(e, "list").stdout.strip() in ("", "no jobs")
