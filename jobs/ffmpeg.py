"""The ffmpeg binary narrate runs: NARRATE_FFMPEG, else the static build shipped by imageio-ffmpeg."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import cast

from narrate.jobs.errors import NarrateError

# "[out#0/s16le @ 0x55d2d162f200] Nothing was written..." -> "Nothing was written..."
_CONTEXT_PREFIX = re.compile(r"^(\[[^\]]* @ 0x[0-9a-f]+\]\s*)+")


class FfmpegError(RuntimeError):
    """ffmpeg ran and failed; the message is its last error line, `log` all of its stderr."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log

    @property
    def first_line(self) -> str:
        """ffmpeg's first error line, often the cause where the last one is the consequence."""
        lines = self.log.splitlines()
        return _CONTEXT_PREFIX.sub("", lines[0]) if lines else str(self)


def ffmpeg_exe(configured: str | None = None) -> str:
    if configured:
        return configured
    import imageio_ffmpeg

    return cast(str, imageio_ffmpeg.get_ffmpeg_exe())  # imageio_ffmpeg is untyped


def run_ffmpeg(
    exe: str, args: list[str], stdin: bytes | None = None, timeout: float | None = None, cwd: Path | None = None
) -> bytes:
    """Run ffmpeg quietly; return stdout. Raises FfmpegError with ffmpeg's last error line (also
    when it runs past `timeout` seconds: it is killed), NarrateError when it cannot be started."""
    try:
        proc = subprocess.run(
            [exe, "-hide_banner", "-nostdin", "-v", "error", *args],
            input=stdin,
            capture_output=True,
            check=False,
            timeout=timeout,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        raise FfmpegError(f"ffmpeg took longer than {timeout:.0f} s and was stopped") from None
    except OSError as e:
        raise NarrateError(
            f"ffmpeg {exe} cannot be run ({e.strerror or e}); set NARRATE_FFMPEG to an ffmpeg binary or unset it"
        ) from None
    if proc.returncode != 0:
        raise ffmpeg_failed(proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout


def ffmpeg_failed(returncode: int, log: str) -> FfmpegError:
    """The error of an ffmpeg that exited with `returncode`: its last error line, without context."""
    lines = log.strip().splitlines()
    if returncode < 0:  # killed: SIGXFSZ is a file past the size limit (EFBIG: "File too large")
        sig = signal.Signals(-returncode).name if -returncode in signal.Signals._value2member_map_ else -returncode
        last = f"ffmpeg was killed by signal {sig}" + (" (File too large)" if sig == "SIGXFSZ" else "")
    else:
        last = _CONTEXT_PREFIX.sub("", lines[-1]) if lines else f"ffmpeg exited with {returncode}"
    return FfmpegError(last, log.strip())
