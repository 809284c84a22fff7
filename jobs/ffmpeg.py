"""The ffmpeg binary narrate runs: NARRATE_FFMPEG, else the static build shipped by imageio-ffmpeg."""

from __future__ import annotations

import subprocess


def ffmpeg_exe(configured: str | None = None) -> str:
    if configured:
        return configured
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def run_ffmpeg(exe: str, args: list[str], stdin: bytes | None = None) -> bytes:
    """Run ffmpeg quietly; return stdout. Raises RuntimeError with ffmpeg's last error line."""
    proc = subprocess.run(
        [exe, "-hide_banner", "-nostdin", "-v", "error", *args],
        input=stdin,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"ffmpeg exited with {proc.returncode}")
    return proc.stdout
