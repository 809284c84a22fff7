"""One request type, validated in one place (narrate.jobs.api.options.Options), for submit, run,
batches and `schedule add`: every option checked the same way, a relative --model made absolute
wherever it is given, and a schedule keeping every option submit takes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from narrate.cli.main import main
from narrate.jobs.api.options import DEFAULTS, Options
from narrate.jobs.errors import BadInput
from narrate.jobs.schedules.definitions import Schedule, get


def test_a_relative_model_path_is_made_absolute(tmp_path, monkeypatch):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert Options.make(model="./ckpt").model == str(ckpt)
    assert (
        Options.make(model="mlx-community/Qwen3-TTS-12Hz-0.6B-Base").model == "mlx-community/Qwen3-TTS-12Hz-0.6B-Base"
    )
    with pytest.raises(BadInput, match="does not exist on this host"):
        Options.make(model="./missing")


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"quant": "3bit"}, "--quant '3bit': use 'bf16'"),
        ({"language": "klingon"}, "klingon"),
        ({"priority": "urgent"}, "--priority 'urgent': use 'high'"),
        ({"fan_out": "sometimes"}, "--fan-out 'sometimes'"),
        ({"input_format": "docx"}, "--input-format 'docx': use 'txt'"),
        ({"book": {"split": "pages"}}, "--split 'pages'"),
        ({"book": {"loudness": "-99"}}, "--loudness '-99'"),
        ({"book": {"subtitles": "ass"}}, "--subtitles"),
        ({"lexicon": Path("/nonexistent/lexicon.txt")}, "lexicon"),
    ],
)
def test_every_option_is_checked_in_one_place(kw, says):
    with pytest.raises(BadInput, match=says.replace("(", r"\(").replace("'", ".")):
        Options.make(**kw)


def test_options_survive_json_with_the_cover(tmp_path):
    cover = tmp_path / "c.png"
    cover.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    lexicon = tmp_path / "lex.txt"
    lexicon.write_text("Nginx = engine x\n")
    opts = Options.make(
        quant="8bit",
        overwrite=True,
        input_format="md",
        include_front_matter=True,
        language="German",
        lexicon=lexicon,
        book={"subtitles": "srt,vtt", "split": "chapters", "cover": cover, "narrator": "N"},
        fan_out="30",
        priority="high",
    )
    assert opts.language == "de" and opts.lexicon == [["Nginx", "engine x"]]
    back = Options.from_json(json.loads(json.dumps(opts.to_json())))
    assert back == opts and back.book.cover == cover.read_bytes()
    assert Options.from_json(json.loads(json.dumps(DEFAULTS.to_json()))) == DEFAULTS


def test_a_schedule_stored_before_the_options_type_still_reads():
    old = {
        "name": "old",
        "cron": "0 2 * * *",
        "tz": "UTC",
        "watch": "/srv/in",
        "output_dir": "",
        "format": ".mp3",
        "voice": "ab" * 32,
        "queue": "narrate",
        "model": "/ckpt",
        "quant": "8bit",
        "language": "fr",
        "lexicon": [["a", "b"]],
        "job_settings": {"seed": 3},
        "created": 1.0,
    }
    opts = Schedule.from_json(json.dumps(old)).opts
    assert (opts.model, opts.quant, opts.language, opts.lexicon) == ("/ckpt", "8bit", "fr", [["a", "b"]])
    assert opts.seed == 3  # its job settings, kept beside the options then, are the request's numbers now
    assert opts.priority == "normal" and opts.book == DEFAULTS.book


def _cli_env(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith("NARRATE_")}


def test_schedule_add_stores_an_absolute_model_and_every_submit_option(env, home, voice_wav, external_redis):
    """`schedule add --model ./ckpt` used to store the relative path unchecked (submit made it
    absolute); and schedule add had no --max-frames, --priority, --subtitles, --split or tags."""
    ckpt = home / "ckpt"
    shutil.copytree(env["NARRATE_MODEL"], ckpt)
    watch = home / "inbox"
    watch.mkdir()
    cwd = os.getcwd()
    os.chdir(home)
    try:
        result = CliRunner().invoke(
            main,
            [
                "schedule",
                "add",
                "nightly",
                "--cron",
                "0 2 * * *",
                "--watch",
                str(watch),
                "--voice",
                str(voice_wav),
                "--model",
                "./ckpt",
                "--max-frames",
                "7",
                "--priority",
                "high",
                "--subtitles",
                "srt",
                "--split",
                "chapters",
                "--narrator",
                "Ann",
                "--author",
                "Bo",
                "--year",
                "2026",
                "--seed",
                "5",
                "--sentence-pause",
                "100",
                "--fan-out",
                "none",
                "--input-format",
                "md",
            ],
            env=_cli_env(env),
        )
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    sched = get(external_redis, "nightly")
    opts = sched.opts
    assert opts.model == str(ckpt)
    assert opts.priority == "high" and opts.fan_out == "none" and opts.reading.input_format == "md"
    assert (opts.book.subtitles, opts.book.split, opts.book.narrator, opts.book.author, opts.book.year) == (
        "srt",
        "chapters",
        "Ann",
        "Bo",
        "2026",
    )
    assert (opts.max_frames, opts.seed, opts.sentence_pause_ms) == (7, 5, 100)  # the request's, in its options
    assert (opts.paragraph_pause_ms, opts.chapter_pause_ms) == (750, 2000)  # this host's, kept as it was
    assert "job_settings" not in json.loads(sched.to_json())  # the request and nothing else
    shown = CliRunner().invoke(main, ["schedule", "list"], env=_cli_env(env))
    assert shown.exit_code == 0, shown.output
    assert "priority high" in shown.output and "subtitles srt" in shown.output and "split chapters" in shown.output


def test_a_tick_submits_with_the_schedules_options(env, home, voice_wav, external_redis):
    """What a tick submits carries the schedule's options: its queue is the priority's, its spec has the
    subtitles, split, tags and frame cap."""
    from narrate.jobs.server.records import fetch

    watch = home / "inbox"
    watch.mkdir()
    (watch / "a.txt").write_text("One sentence here. And a second one.")
    os.utime(watch / "a.txt", (1, 1))  # long settled
    e = _cli_env(env) | {"NARRATE_SCHEDULE_SETTLE_S": "0"}
    r = CliRunner()
    added = r.invoke(
        main,
        [
            "schedule",
            "add",
            "news",
            "--cron",
            "0 2 * * *",
            "--watch",
            str(watch),
            "--voice",
            str(voice_wav),
            "--priority",
            "low",
            "--subtitles",
            "vtt",
            "--narrator",
            "Ann",
            "--max-frames",
            "9",
        ],
        env=e,
    )
    assert added.exit_code == 0, added.output
    ran = r.invoke(main, ["schedule", "run", "news", "--json"], env=e)
    assert ran.exit_code == 0, ran.output
    [sub] = json.loads(ran.output)["submitted"]
    job = fetch(external_redis, sub["job"])
    spec = job.args[0]
    assert job.origin == "narrate-low"
    assert spec["subtitles"] == "vtt" and spec["narrator"] == "Ann" and spec["max_frames"] == 9
