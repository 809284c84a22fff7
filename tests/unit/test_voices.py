"""Voice files in the formats people have, including those ffmpeg must seek in, and hostile ones:
each is read, or refused with one clear line, and no temporary copy is ever left behind."""

from __future__ import annotations

import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers.audio import write_voice
from helpers.cli import invoke
from narrate.jobs.audio import samples as voices
from narrate.jobs.audio.samples import read_voice
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.ffmpeg import ffmpeg_exe

FFMPEG = ffmpeg_exe()


def encode(src: Path, dst: Path, *args: str) -> Path:
    subprocess.run([FFMPEG, "-v", "error", "-y", "-i", str(src), *args, str(dst)], check=True)
    return dst


def atoms(path: Path) -> list[bytes]:
    """The top-level atom types of an MP4/MOV file, in file order."""
    data, out, at = path.read_bytes(), [], 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        size = struct.unpack(">Q", data[at + 8 : at + 16])[0] if size == 1 else size or len(data) - at
        out.append(kind)
        at += size
    return out


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    return write_voice(tmp_path_factory.mktemp("v") / "speech.wav", seconds=20)


@pytest.mark.parametrize(
    "name, args",
    [
        ("voice.m4a", ["-c:a", "aac"]),  # what ffmpeg writes by default: the index (moov) after the audio
        ("voice.mp4", ["-c:a", "alac"]),
        ("voice.mov", ["-c:a", "pcm_s16le"]),
        (
            "video.mp4",
            [
                "-f",
                "lavfi",
                "-i",
                "color=c=red:s=64x64:d=20",
                "-map",
                "0:a",
                "-map",
                "1:v",
                "-c:a",
                "aac",
                "-c:v",
                "mpeg4",
                "-shortest",
            ],
        ),  # a phone video of someone speaking
    ],
)
def test_mp4_with_its_index_at_the_end_is_read(tmp_path, speech, name, args):
    path = tmp_path / name
    if name.startswith("video"):  # the second input must come before the output options
        subprocess.run([FFMPEG, "-v", "error", "-y", "-i", str(speech), *args, str(path)], check=True)
    else:
        encode(speech, path, *args)
    kinds = atoms(path)
    assert kinds.index(b"moov") > kinds.index(b"mdat")  # ffmpeg must seek to find the samples
    voice = read_voice(path, FFMPEG)
    assert abs(voice.seconds - 20) < 0.2


@pytest.mark.parametrize(
    "name, args",
    [
        ("v.flac", []),
        ("v.mp3", []),
        ("v.ogg", ["-c:a", "libvorbis"]),
        ("v.opus", ["-c:a", "libopus"]),
        ("v.mka", ["-c:a", "aac"]),
        ("v.aiff", []),
        ("v.caf", []),
        ("v.wma", []),
        ("v8ch.wav", ["-ac", "8"]),
        ("v8k.wav", ["-ar", "8000"]),
        ("v96k.flac", ["-ar", "96000"]),
        ("faststart.m4a", ["-c:a", "aac", "-movflags", "+faststart"]),
    ],
)
def test_other_formats_channel_counts_and_rates(tmp_path, speech, name, args):
    voice = read_voice(encode(speech, tmp_path / name, *args), FFMPEG)
    assert abs(voice.seconds - 20) < 0.2


def wav_with_header(path: Path, rate: int, channels: int, seconds: float = 3.0) -> Path:
    """A WAV whose header declares `rate` and `channels`, over 48 kHz-ish tone samples."""
    n = int(8000 * seconds)
    tone = (0.3 * np.sin(2 * np.pi * 150 * np.arange(n) / 8000) * 32767).astype("<i2")
    data = np.repeat(tone[:, None], max(channels, 1), axis=1).tobytes()
    fmt = struct.pack(
        "<HHIIHH", 1, channels, rate & 0xFFFFFFFF, (rate * max(channels, 1) * 2) & 0xFFFFFFFF, max(channels, 1) * 2, 16
    )
    path.write_bytes(
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )
    return path


@pytest.mark.parametrize(
    "rate, channels, message",
    [
        (0, 1, "Invalid sample rate"),
        (2**31 - 1, 1, "has no audio ffmpeg can decode"),
        (8000, 0, "is not audio ffmpeg can read"),
        (8000, 255, "has no audio ffmpeg can decode"),
        (1_000_000, 1, "give at least 1 s"),
        (1, 1, "longer than 60 s"),
    ],
)
def test_absurd_sample_rates_and_channel_counts_are_one_clear_line(tmp_path, rate, channels, message):
    path = wav_with_header(tmp_path / "odd.wav", rate, channels)
    with pytest.raises(BadInput, match=message) as e:
        read_voice(path, FFMPEG)
    assert "\n" not in str(e.value) and " @ 0x" not in str(e.value)  # no ffmpeg context pointers


def test_a_video_or_an_image_without_sound(tmp_path):
    silent_video = tmp_path / "silent.mp4"
    subprocess.run(
        [FFMPEG, "-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x64:d=3", "-c:v", "mpeg4", str(silent_video)],
        check=True,
    )
    image = tmp_path / "photo.png"
    subprocess.run(
        [FFMPEG, "-v", "error", "-f", "lavfi", "-i", "color=c=red:s=64x64", "-frames:v", "1", str(image)], check=True
    )
    for path in (silent_video, image):
        with pytest.raises(BadInput, match="has no audio stream"):
            read_voice(path, FFMPEG)


def test_a_playlist_is_not_followed(tmp_path, speech):
    """A voice that is an HLS playlist or an ffconcat script naming other local files is refused."""
    flac = encode(speech, tmp_path / "other.flac")
    playlist = tmp_path / "voice.m3u8"
    playlist.write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:20\n#EXTINF:20,\nfile://{flac}\n#EXT-X-ENDLIST\n")
    concat = tmp_path / "voice.txt"
    concat.write_text(f"ffconcat version 1.0\nfile {flac}\n")
    for path in (playlist, concat):
        with pytest.raises(BadInput, match="is not audio ffmpeg can read"):
            read_voice(path, FFMPEG)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """Where tempfile puts things while the test runs, to see what is left there."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_no_temporary_copy_is_left_on_success_or_any_error(tmp_path, speech, private_tmp, monkeypatch):
    m4a = encode(speech, tmp_path / "v.m4a", "-c:a", "aac")
    silent = write_voice(tmp_path / "silent.wav", amplitude=0)
    text = tmp_path / "notes.wav"
    text.write_text("not audio")
    assert read_voice(m4a, FFMPEG).seconds > 19
    for path, message in ((silent, "is silent"), (text, "not audio")):
        with pytest.raises(BadInput, match=message):
            read_voice(path, FFMPEG)
    hang = tmp_path / "ffmpeg-that-hangs"
    hang.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    hang.chmod(0o755)
    monkeypatch.setattr(voices, "DECODE_TIMEOUT_S", 0.5)
    with pytest.raises(BadInput, match="took longer than"):
        read_voice(m4a, str(hang))
    with pytest.raises(NarrateError, match="cannot be run"):
        read_voice(m4a, str(tmp_path / "no-such-ffmpeg"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    def disk_full(self, data):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(Path, "write_bytes", disk_full)
        with pytest.raises(NarrateError, match="cannot copy .* No space left on device; free some space"):
            read_voice(m4a, FFMPEG)
    monkeypatch.setattr(voices, "run_ffmpeg", interrupted)
    with pytest.raises(KeyboardInterrupt):
        read_voice(m4a, FFMPEG)
    assert list(private_tmp.iterdir()) == []


def test_a_missing_ffmpeg_is_one_clear_line(env, home, voice_wav, external_redis):
    doc = home / "ok.txt"
    doc.write_text("A fine sentence.")
    env = dict(env, NARRATE_FFMPEG=str(home / "no-such-ffmpeg"))
    proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "ok.mp3"))
    err = proc.stderr.strip()
    assert proc.returncode != 0 and len(err.splitlines()) == 1, err
    assert err.startswith("Error: ffmpeg ") and "cannot be run" in err and "NARRATE_FFMPEG" in err, err
    assert external_redis.dbsize() == 0


def float_wav(path: Path, samples: np.ndarray) -> Path:
    data = samples.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, 24000, 24000 * 4, 4, 32)  # IEEE float, mono, 24 kHz
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<I", 16) + fmt
    path.write_bytes(header + b"data" + struct.pack("<I", len(data)) + data)
    return path


def test_a_constant_level_is_silence(tmp_path):
    """A DC level, or float samples that are NaN or infinite (decoded as full scale), carry no voice."""
    n = 24000 * 3
    for name, samples in (("dc", np.full(n, 0.5)), ("nan", np.full(n, np.nan)), ("inf", np.full(n, np.inf))):
        with pytest.raises(BadInput, match="is silent"):
            read_voice(float_wav(tmp_path / f"{name}.wav", samples), FFMPEG)
    t = np.arange(n) / 24000
    speechlike = 0.4 + 0.2 * np.sin(2 * np.pi * 150 * t)  # a real signal on an offset is still a voice
    assert read_voice(float_wav(tmp_path / "offset.wav", speechlike), FFMPEG).seconds == 3
