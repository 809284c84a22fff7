"""The service files under deploy/: the launchd agents are valid property lists with the keys
launchd needs, the systemd units parse (and pass `systemd-analyze verify` where it is installed),
and every one runs a narrate command that this tree's CLI accepts, stopped with SIGTERM and given
time to finish the batch in flight."""

from __future__ import annotations

import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from narrate.cli.main import main as cli
from narrate.jobs.settings import Settings, default, env_name

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PLISTS = sorted((DEPLOY / "launchd").glob("*.plist"))
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
COMMANDS = {"worker", "dashboard", "scheduler"}
HANG_TIMEOUT_S = default("hang_timeout")  # a batch taking longer counts as hung
VARIABLES = {env_name(name) for name in Settings.model_fields}


def check_command(args: list[str]) -> str:
    """The narrate subcommand of a service's command line, parsed by this tree's CLI."""
    assert args[0].endswith("/.venv/bin/narrate"), args
    name, rest = args[1], args[2:]
    assert name in COMMANDS, args
    assert name in cli.commands, f"{' '.join(args)}: this tree's CLI has no `narrate {name}` command"
    cli.commands[name].make_context(name, list(rest))  # raises on an unknown option
    return name


def test_every_service_has_a_launchd_agent_and_a_systemd_unit():
    assert {p.name for p in PLISTS} == {f"local.narrate.{c}.plist" for c in COMMANDS}
    assert {p.name for p in UNITS} == {f"narrate-{c}.service" for c in COMMANDS}


@pytest.mark.parametrize("path", PLISTS, ids=lambda p: p.name)
def test_launchd_agent(path):
    with path.open("rb") as f:
        plist = plistlib.load(f)  # well-formed XML property list (a "--" in a comment is not)
    assert plist["Label"] == path.stem
    name = check_command(plist["ProgramArguments"])
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}  # restarted on failure, not after a stop
    assert plist["StandardOutPath"].endswith(f"Library/Logs/narrate-{name}.log")
    assert plist["StandardErrorPath"] == plist["StandardOutPath"]
    env = plist["EnvironmentVariables"]
    assert all(isinstance(v, str) for v in env.values()) and any(k.startswith("NARRATE_") for k in env)
    commented = re.findall(r"<key>(NARRATE_\w+)</key>", path.read_text())  # set and commented-out ones
    assert {k for k in env if k.startswith("NARRATE_")} <= set(commented) <= VARIABLES
    if name == "worker":
        assert plist["ExitTimeOut"] >= HANG_TIMEOUT_S  # SIGTERM -> the batch in flight finishes
        assert plist["ProcessType"] == "Interactive"  # not throttled by launchd
    text = path.read_text()
    home_paths = re.findall(r"<string>(/Users/[^<]*)</string>", text)
    assert home_paths and all(p.startswith("/Users/you") for p in home_paths)  # the README's sed swaps it


def unit_sections(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as {section: {key: [values]}}, refusing anything that is not a comment, a
    [Section] header or a Key=value line inside a section."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if m := re.fullmatch(r"\[([A-Za-z]+)\]", line):
            current = sections.setdefault(m.group(1), {})
            continue
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9]*)=(.*)", line)
        assert m and current is not None, f"line {n} is not Key=value in a section: {line!r}"
        current.setdefault(m.group(1), []).append(m.group(2))
    return sections


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_systemd_unit(path, tmp_path):
    unit = unit_sections(path.read_text())
    assert set(unit) == {"Unit", "Service", "Install"}
    service = {k: v[-1] for k, v in unit["Service"].items()}
    exec_start = service["ExecStart"].split()
    name = check_command(exec_start)
    assert exec_start[0].startswith("%h/")  # the user's home (user unit)
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    assert service["KillMode"] == "process"  # narrate signals its own children
    assert service["EnvironmentFile"] == "-%h/.config/narrate/env"
    assert unit["Install"]["WantedBy"] == ["default.target"]
    if name == "worker":
        assert int(service["TimeoutStopSec"]) >= HANG_TIMEOUT_S
        assert service["RestartPreventExitStatus"] == "2"  # a configuration error is not retried

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # macOS: the parser check above is what runs
    # verify checks that ExecStart's program exists: point it at a real executable.
    real = Path(sys.executable).with_name("narrate")
    real = real if real.exists() else Path(sys.executable)
    copy = tmp_path / path.name
    copy.write_text(path.read_text().replace("%h/narrate/.venv/bin/narrate", str(real)))
    proc = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr  # unknown keys are only warnings


def test_the_environment_file_example_names_real_settings():
    names = re.findall(r"^#?([A-Z_]+)=", (DEPLOY / "systemd" / "env.example").read_text(), re.M)
    assert "NARRATE_REDIS_URL" in names and {n for n in names if n.startswith("NARRATE_")} <= VARIABLES


def test_unit_checks_catch_a_bad_unit(tmp_path):
    """The checks above fail on a malformed unit (so that passing means something)."""
    with pytest.raises(AssertionError, match="not Key=value"):
        unit_sections("[Service]\nExecStart narrate worker\n")
    analyze = shutil.which("systemd-analyze")
    if analyze:
        bad = tmp_path / "bad.service"
        bad.write_text(f"[Service]\nExecStart={sys.executable}\nKillMode=mixd\nRestat=on-failure\n")
        proc = subprocess.run([analyze, "verify", str(bad)], capture_output=True, text=True, timeout=60)
        assert "mixd" in proc.stderr and "Restat" in proc.stderr
