"""The CLI's parsing and output in this process (click's CliRunner): usage, bad flags and missing
options, and `status`, `list` and `info` of queued and scheduled jobs against the external Redis,
as text and as JSON."""

from __future__ import annotations

import json
import re

from helpers.books import write_docs
from helpers.cli import invoke
from helpers.fake import fake_env
from helpers.ops import one_error_line, submit_json
from helpers.servers import external_redis_url

COMMANDS = (
    "submit",
    "run",
    "chapters",
    "cast",
    "status",
    "proof",
    "redo",
    "list",
    "watch",
    "cancel",
    "resume",
    "info",
    "fetch",
    "export",
    "schedule",
    "scheduler",
    "feed",
    "worker",
    "dashboard",
    "serve",
    "bench",
    "cache",
    "voice",
)


def test_help_names_every_command(env):
    ran = invoke(env, "--help")
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert ran.stdout.startswith("Usage: narrate [OPTIONS] COMMAND [ARGS]...")
    listed = re.findall(r"^  (\S+)", ran.stdout.split("Commands:", 1)[1], re.M)
    assert sorted(listed) == sorted(COMMANDS), listed
    for name in ("submit", "schedule", "cache", "voice", "feed", "export"):
        sub = invoke(env, name, "--help")
        assert sub.returncode == 0 and sub.stdout.startswith(f"Usage: narrate {name} "), sub.stdout


def test_bad_flags_and_missing_options_are_usage_errors(env, home):
    doc = home / "doc.txt"
    doc.write_text("One sentence.")
    for args, says in (
        (["submit", str(doc), "--voice", "v.wav", "--bogus"], "No such option '--bogus'"),
        (["submit", str(doc)], "Missing option '--voice'"),
        (["submit", "--voice", "v.wav"], "Missing argument 'DOCUMENTS...'"),
        (["list", "--status", "lost"], "Invalid value for '--status'"),
        (["submit", str(doc), "--voice", "v.wav", "--seed", "-1"], "Invalid value for '--seed'"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ):
        ran = invoke(env, *args)
        assert ran.returncode == 2 and ran.stdout == "", (args, ran)
        assert says in ran.stderr and "Usage: narrate" in ran.stderr, (args, ran.stderr)


def test_status_list_and_info_of_queued_and_scheduled_jobs(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    urgent, later = write_docs(home / "in", {"urgent.txt": 3, "later.txt": 2})
    [high] = submit_json(e, [urgent], voice_wav, "-o", str(home / "out"), "--priority", "high", run=invoke)
    [due] = submit_json(e, [later], voice_wav, "-o", str(home / "out"), "--in", "1h", run=invoke)
    assert (high["status"], due["status"]) == ("queued", "scheduled")

    shown = invoke(e, "status", high["id"])
    assert shown.returncode == 0 and shown.stdout.splitlines()[0] == f"{high['id']}: queued (0/3 sentences)"
    st = json.loads(invoke(e, "status", due["id"], "--json").stdout)
    assert st["status"] == "scheduled" and st["scheduled_for"] == due["scheduled_for"]
    assert "progress: scheduled · 0/2 sentences (0%) · due " in invoke(e, "status", due["id"]).stdout
    assert "no job 'narrate-nope'" in one_error_line(invoke(e, "status", "narrate-nope"))

    rows = {row["id"]: row for row in map(json.loads, invoke(e, "list", "--json").stdout.splitlines())}
    assert set(rows) == {high["id"], due["id"]}
    assert rows[high["id"]]["priority"] == "high" and rows[high["id"]]["output"] == str(home / "out" / "urgent.mp3")
    assert rows[due["id"]]["status"] == "scheduled" and rows[due["id"]]["scheduled_for"] == due["scheduled_for"]
    text = invoke(e, "list").stdout.splitlines()
    assert text[0].split() == ["ID", "DOCUMENT", "STATUS", "PROGRESS", "ETA", "OUTPUT"] and len(text) == 3
    row = next(line for line in text if line.startswith(high["id"]))
    assert "urgent.txt" in row and "queued (high)" in row and "0/3 0%" in row
    none = invoke(e, "list", "--status", "started")
    assert none.returncode == 0 and none.stdout == "" and none.stderr.strip() == "no started jobs"

    facts = json.loads(invoke(e, "info", "--json").stdout)
    queues = {q["name"]: q for q in facts["queues"]}
    assert facts["workers"] == [] and facts["server"]["kind"] == "url"
    assert (queues["narrate-high"]["queued"], queues["narrate"]["scheduled"], queues["narrate-low"]["queued"]) == (
        1,
        1,
        0,
    )
    out = invoke(e, "info").stdout
    assert out.startswith(f"server: {external_redis_url()} (NARRATE_REDIS_URL, version ")
    assert (
        "  narrate-high (high): 1 queued, 0 scheduled, 0 started" in out
        and "  narrate (normal): 0 queued, 1 scheduled" in out
    )
    assert "workers: none" in out and "schedules: none" in out
