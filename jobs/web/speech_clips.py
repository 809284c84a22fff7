"""A speech request (`POST /v1/audio/speech`, jobs/web/speech_api.py) as clip jobs on narrate's
workers: the input is split into sentences (the documents' splitter) and grouped into lines a clip
job speaks (the first sentence alone, for fast first audio; then up to the clip's line limit); each
line is a preview clip job (jobs/api/voice_actions.py `preview`: high priority, on any worker, under the
host lock), all enqueued at once, in order. Each clip comes back through Redis as a WAV (or in
pieces, while it rides along a book); its samples are streamed as soon as they come, encoded by one
ffmpeg for the whole answer (mp3, opus, aac, flac) or sent as they are (pcm, wav).

Waiting for a clip is a blocking read of its parts stream (jobs/voices/clips.py `parts_key`: XREAD
BLOCK, on a connection of the request's own, connection.async_blocking_client): the worker's XADD
of a piece, or of the clip's end once it is stored whole, wakes it at once. Only when BLOCK_S passes
without an entry is the job's state looked at (failed, canceled, no worker, too long, the server
stopping). Identical requests share their clip jobs (the ids come from the text): each request holds
the clips it waits for (clips.py `hold`, a count in Redis), and lets them go when it ends, however it
ends (`let_go`); only the last one to let a clip go removes its stream, and cancels its job if it
went away before the clip was spoken. A worker writes to no stream that is gone (clients that went
away leave nothing behind), and one client's hang-up never cuts another's audio short."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import struct
import time
import wave
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import anyio
import redis
from narrate.jobs.api import submit as submit_api
from narrate.jobs.api import voice_actions as voices_api
from narrate.jobs.documents.documents import parse_document
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs.outputs import AAC, FORMATS
from narrate.jobs.queue.cancel import cancel
from narrate.jobs.server.connection import async_blocking_client
from narrate.jobs.server.records import find
from narrate.jobs.settings import SAMPLE_RATE, Settings
from narrate.jobs.voices import clips
from narrate.jobs.voices.choice import VoiceChoice
from narrate.jobs.web.choices import check_model, choose_voice
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.state import Web
from rq.job import Job

log = logging.getLogger("narrate.web")
MAX_INPUT_CHARS = 4096
ENCODE = {
    "mp3": ["-f", "mp3", *FORMATS[".mp3"][1]],
    "opus": ["-f", "ogg", *FORMATS[".opus"][1]],
    "aac": ["-f", "adts", *AAC],
    "flac": ["-f", "flac", "-c:a", "flac"],
}
MEDIA = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
BLOCK_S = 1.0  # a wait for a clip's next entry blocks this long at most, then the job's state is looked at
NO_WORKER_CHECK_S = 10.0  # a supervisor restarts a crashed worker within seconds
WAIT_S = 900.0  # a clip waits at most this long for a worker (a running book's batch, a model load)


@dataclass(frozen=True)
class Speech:
    lines: list[str]
    voice: VoiceChoice
    language: str
    model: str | None  # None: the workers' NARRATE_MODEL


def lines_of(text: str, language: str | None) -> tuple[list[str], str]:
    """(the lines the clip jobs speak, the language): the first sentence alone, then sentences joined
    up to a clip's limit."""
    doc = parse_document(text.encode(), title="speech", origin="input", language=language)
    lines: list[str] = []
    for sentence in doc.sentences:
        s = str(sentence)
        if len(lines) > 1 and len(lines[-1]) + 1 + len(s) <= clips.MAX_LINE_CHARS:
            lines[-1] += " " + s
        else:
            lines.append(s)
    return lines, doc.language


def prepare(r: redis.Redis, settings: Settings, body: dict, folder: Path) -> Speech:
    """Check a speech request (raises ApiError or BadInput); nothing is enqueued."""
    if body["speed"] != 1.0:
        raise ApiError(400, f"speed {body['speed']}: only 1.0 is supported (narrate speaks at its own pace)", "speed")
    text = body["input"]
    if len(text) > MAX_INPUT_CHARS:
        raise ApiError(
            413,
            f"input is {len(text)} characters; the limit is {MAX_INPUT_CHARS}: narrate a longer "
            "text as a document with POST /v1/narrations",
            "input",
        )
    if not text.strip():
        raise ApiError(400, "input is empty; give the text to speak", "input")
    model = check_model(body["model"], settings)
    voice = body["voice"]["id"] if isinstance(body["voice"], dict) and "id" in body["voice"] else body["voice"]
    if not isinstance(voice, str):
        raise ApiError(400, 'voice: give a name, a data: URL or {"id": NAME}', "voice")
    chosen = choose_voice(r, settings, voice, model, body.get("instructions"), folder)
    lines, language = lines_of(text, body.get("language"))
    return Speech(lines, chosen, language, model)


GIVEN_UP = ("canceled", "stopped")  # a clip another request let go of just before this one held it


def enqueue(r: redis.Redis, settings: Settings, speech: Speech) -> list[str]:
    """One clip job per line, in order (identical lines, and requests, share their clip jobs), held by
    this request, and the parts streams the request reads them from."""

    def clip(line: str) -> str:
        return voices_api.preview(settings, r, speech.voice, line, speech.language, speech.model).id

    ids = [clip(line) for line in speech.lines]
    clips.hold(r, ids)
    clips.open_parts(r, ids)
    for i, line in enumerate(speech.lines):  # cancelled by the last request that held it, before this one did
        if _state(r.hget(Job.key_for(ids[i]), "status")) in GIVEN_UP:
            clip(line)  # made anew under the same id (voices_api: a cancelled clip job is not reused)
    return ids


def let_go(r: redis.Redis, job_ids: list[str], early: bool) -> None:
    """This request no longer waits for its clips (it ended: `early` when the client went away or a
    clip failed before the answer was whole); the clips no other request waits for lose their parts
    streams and, when `early`, those not yet done are cancelled."""
    try:
        last = clips.release(r, job_ids)
    except redis.RedisError:
        return  # the streams expire (clips.PARTS_KEEP_S); the jobs finish and are kept as clips
    if early:
        for job_id in last:
            with contextlib.suppress(Exception):
                cancel(r, job_id, "narrate serve: the speech request ended")


def _state(raw: object) -> str:
    return raw.decode() if isinstance(raw, bytes) else "gone"


def _new_part(fields: dict[bytes, bytes], have: int) -> bytes:
    """What a piece adds to the `have` bytes already sent: a piece of a later take that repeats them
    adds only what goes beyond; one past a gap (pieces written before the stream was made) adds
    nothing (the rest comes from the clip kept whole)."""
    at, pcm = int(fields[clips.AT]), fields[clips.PIECE]
    if at > have or at + len(pcm) <= have:
        return b""
    return pcm[have - at :]


@dataclass
class Streamed:
    """Whether any clip of an answer came in pieces (then a WAV answer's length is not known ahead)."""

    pieces: bool = False


async def clip_audio(web: Web, job_id: str, deadline: float, streamed: Streamed) -> AsyncGenerator[bytes]:
    """The clip's 16-bit samples: its pieces as a worker speaks them (a clip riding along a book
    streams them, clips.parts_key), the rest once its job finished; at least one block (maybe empty).
    Raises ApiError when it failed, no worker takes it, or the server stops. Waiting holds no
    thread: a blocking read on a connection of its own, cancelled when the client goes away."""
    r, key = web.redis, clips.parts_key(job_id, 1)
    reader = async_blocking_client(web.settings, BLOCK_S)
    checked = time.monotonic()
    sent = bytearray()
    last: bytes | str = "0-0"  # the stream's entries after this one (from its start: nothing is missed)
    look = True  # at the job's state: first, then after each block that brought nothing
    try:
        while True:
            if look:
                ended, checked = await _ended(web, reader, job_id, bool(sent), deadline, checked)
                if ended:
                    break
            if web.stopping.is_set():
                raise ApiError(503, "the server is stopping; ask again once it is back")
            got = await reader.xread({key: last}, block=int(BLOCK_S * 1000), count=64)
            look = not got
            ended = False
            for _, entries in cast("list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]", got or []):
                for entry_id, fields in entries:
                    last = entry_id
                    if clips.END in fields:
                        ended = True
                    elif clips.PIECE in fields and (piece := _new_part(fields, len(sent))):
                        sent += piece
                        streamed.pieces = True
                        yield piece
            if ended:
                break
        whole = await asyncio.to_thread(_samples, r, job_id)
        if whole[: len(sent)] != sent:  # another take than the pieces' (a rider given back mid-way)
            log.warning("clip %s: its pieces and its whole audio differ; the rest follows the whole", job_id)
        if len(whole) > len(sent) or not sent:
            yield whole[len(sent) :]
    finally:
        with anyio.CancelScope(shield=True):  # the client went away: its connection is closed all the same
            await reader.aclose()


async def _ended(
    web: Web, reader: redis.asyncio.Redis, job_id: str, pieces: bool, deadline: float, checked: float
) -> tuple[bool, float]:
    """(whether the clip's job has finished: its clip is stored, when a worker was last looked for);
    raises ApiError when it will not finish."""
    state = _state(await reader.hget(Job.key_for(job_id), "status"))
    if state == "finished":
        return True, checked
    if state in ("failed", "stopped", "canceled", "gone"):
        job = await asyncio.to_thread(find, web.redis, job_id)
        error = ((job.meta or {}).get("error") if job is not None else None) or state
        raise ApiError(502, f"the worker could not speak it ({error})")
    now = time.monotonic()
    if state == "queued" and not pieces and now - checked > NO_WORKER_CHECK_S:
        checked = now
        if await asyncio.to_thread(submit_api.unattended_queue, web.redis, job_id):
            raise ApiError(503, "no worker takes jobs from this server's queues; start one (narrate worker)")
    if now > deadline:
        raise ApiError(504, f"no worker spoke it within {WAIT_S:.0f} s (busy, or none is running)")
    return False, checked


def _samples(r: redis.Redis, job_id: str) -> bytes:
    with wave.open(io.BytesIO(clips.get_clip(r, job_id, 1))) as w:
        return bytes(w.readframes(w.getnframes()))


def wav_header(frames: int | None) -> bytes:
    """A 24 kHz mono 16-bit WAV header; `frames` None: a stream of unknown length (sizes at their maximum)."""
    data = 0xFFFFFFFF - 36 if frames is None else frames * 2
    return (
        b"RIFF"
        + struct.pack("<I", min(36 + data, 0xFFFFFFFF))
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, SAMPLE_RATE, SAMPLE_RATE * 2, 2, 16)
        + b"data"
        + struct.pack("<I", data)
    )


async def pcm_stream(
    web: Web, job_ids: list[str], first: bytes, rest: AsyncIterator[bytes], streamed: Streamed
) -> AsyncIterator[bytes]:
    """The samples of every clip in order, as they come (the first clip's first block already waited
    for, `rest` its remainder)."""
    yield first
    async for block in rest:
        yield block
    deadline = time.monotonic() + WAIT_S
    for job_id in job_ids[1:]:
        async for block in clip_audio(web, job_id, deadline, streamed):
            yield block


async def encoded(pcm: AsyncIterator[bytes], fmt: str, settings: Settings, single: bool) -> AsyncIterator[bytes]:
    """`pcm` in the response format: pcm and wav as they come (`single`: all of it in one block, so a
    WAV header with its length), the others through one ffmpeg."""
    if fmt in ("pcm", "wav"):
        if fmt == "wav" and not single:
            yield wav_header(None)
        async for chunk in pcm:
            yield wav_header(len(chunk) // 2) + chunk if fmt == "wav" and single else chunk
        return
    proc = await asyncio.create_subprocess_exec(
        ffmpeg_exe(settings.ffmpeg),
        "-hide_banner",
        "-nostdin",
        "-v",
        "error",
        "-f",
        "s16le",
        "-ar",
        str(SAMPLE_RATE),
        "-ac",
        "1",
        "-i",
        "pipe:0",
        *ENCODE[fmt],
        "pipe:1",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            async for chunk in pcm:
                proc.stdin.write(chunk)
                await proc.stdin.drain()
        finally:
            proc.stdin.close()

    feeder = asyncio.create_task(feed())
    try:
        while block := await proc.stdout.read(1 << 16):
            yield block
        await feeder  # raises what the feed raised (a clip that failed)
    finally:
        feeder.cancel()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
