"""The README's offline dry run (random-weight checkpoint, then `narrate run`), run as written:
a newcomer without network access copies these lines."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.procs import NARRATE

ROOT = Path(__file__).resolve().parents[2]


def dry_run_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    after = readme[readme.index("Without network access") :]
    return re.search(r"```sh\n(.*?)```", after, re.S).group(1).strip().splitlines()


def test_the_readme_dry_run_works_offline(env, home, tmp_path):
    e = dict(env, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")
    for name in ("NARRATE_MODEL", "NARRATE_MAX_FRAMES", "NARRATE_OUTPUT_DIR"):
        e.pop(name, None)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")  # run from a copy: the repo stays clean
    commands = dry_run_commands()
    assert len(commands) == 2, commands
    for line in commands:
        words = shlex.split(line.replace("/tmp/tiny-tts", str(tmp_path / "tiny-tts")))
        while "=" in words[0]:  # VAR=value before the command
            name, value = words.pop(0).split("=", 1)
            e[name] = value
        program = {
            ".venv/bin/python": [sys.executable],
            ".venv/bin/narrate": NARRATE,
        }
        proc = subprocess.run(
            program[words[0]] + words[1:], env=e, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, (line, proc.stderr[-2000:])
    out = tmp_path / "sample.wav"
    assert out.is_file() and out.stat().st_size > 10_000
    assert proc.stdout.strip() == str(out)
