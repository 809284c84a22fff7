"""Waiting without polling: a speech request and a book's clip watch block on Redis streams.

- A speech request waiting for its clip blocks on the clip's parts stream (XREAD BLOCK,
  jobs/web/speech_clips.py): while nothing comes it touches the clip's keys about twice a block
  (a read and a look at the job's state), not forty times a second, and a piece written by a worker
  wakes it at once, in well under a block (the read that returns it was already waiting). With the
  embedded Valkey and with an external Redis.
- A client that goes away, before its first audio or while its audio streams, leaves no parts
  stream behind; a worker's later piece makes none (XADD NOMKSTREAM), and the clip job is canceled.
- The clip watch of a worker narrating a book reads the high queue when a clip job is signalled
  (worker/process/clip_watch.py), not every tenth of a second; the speech request still rides along.

Redis's MONITOR shows the commands each server ran; no worker speaks the clips of the first two
tests: the test writes the pieces as a worker riding along a book would (jobs/voices/clips.py)."""

from __future__ import annotations

import json
import queue
import random
import signal
import socket
import statistics
import threading
import time

import pytest
import redis
from helpers.procs import wait_until
from helpers.servers import external_redis_url
from helpers.web import Served, add_voice, post_book, serve
from narrate.jobs.queue.queues import queue_for
from narrate.jobs.server.records import queue as rq_queue
from narrate.jobs.voices import clips
from narrate.jobs.web.speech_clips import BLOCK_S
from narrate.worker.process.clip_watch import WATCH_S


class Monitor:
    """The commands a Redis server runs meanwhile (MONITOR, on a connection of its own): (server time, db, command)."""

    def __init__(self, r: redis.Redis) -> None:
        self.seen: list[tuple[float, int, str]] = []
        self._m = r.monitor()
        self._m.__enter__()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        try:
            for said in self._m.listen():
                self.seen.append((float(said["time"]), int(said["db"]), said["command"]))
        except (redis.RedisError, OSError, ValueError):  # closed
            pass

    def between(self, db: int, t0: float, t1: float, *words: str) -> list[str]:
        """The commands of `db` run from t0 to t1 (unix time) that hold every one of `words`."""
        return [c for t, d, c in list(self.seen) if d == db and t0 <= t <= t1 and all(w in c for w in words)]

    def close(self) -> None:
        self._m.connection.disconnect()


class Raw:
    """`POST /v1/audio/speech` on a socket of its own: each bit of the answer with the time it came
    (monotonic), and a client that can go away at any moment (the socket closed)."""

    def __init__(self, s: Served, text: str) -> None:
        port = int(s.url.rsplit(":", 1)[1])
        body = json.dumps({"model": "tts-1", "voice": "alice", "input": text, "response_format": "pcm"}).encode()
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(
            b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json"
            b"\r\nContent-Length: %d\r\n\r\n%s" % (port, len(body), body)
        )
        self.came: queue.Queue[tuple[float, bytes]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            self.came.put((time.monotonic(), data))
            if not data:
                return

    def next(self, timeout: float = 60) -> tuple[float, bytes]:
        return self.came.get(timeout=timeout)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def client_of(s: Served, url: str | None) -> tuple[redis.Redis, int]:
    """A client of the server's Redis and the DB it uses."""
    if url is None:
        return redis.Redis(unix_socket_path=str(s.home / "valkey.sock")), 0
    r = redis.Redis.from_url(url)
    return r, int(r.connection_pool.connection_kwargs.get("db", 0))


def the_clip(r: redis.Redis, but: tuple[str, ...] = ()) -> str:
    """The clip job a request has just enqueued (and its parts stream made)."""
    high = rq_queue(r, queue_for("narrate", "high"))

    def found() -> str | None:
        ids = [i for i in high.job_ids if i not in but]
        return ids[0] if ids and r.exists(clips.parts_key(ids[0], 1)) else None

    return wait_until(found, 60, "the speech request's clip job and its parts stream")


def state(r: redis.Redis, job_id: str) -> str | None:
    raw = r.hget(f"rq:job:{job_id}", "status")
    return raw.decode() if raw else None


@pytest.mark.parametrize("server", ["embedded", "external"])
def test_a_waiting_speech_request_blocks_and_a_piece_wakes_it(server, checkpoint, voice_wav, request):
    url = None
    if server == "external":
        request.getfixturevalue("external_redis")  # its DB flushed around the test
        url = external_redis_url()
    s = serve(checkpoint, **({"NARRATE_REDIS_URL": url} if url else {}))  # no worker: the test speaks
    r, db = client_of(s, url)
    monitor = Monitor(r)
    try:
        add_voice(s, voice_wav)
        answer = Raw(s, "Hello, waiting.")
        job_id = the_clip(r)
        t0 = time.time()
        time.sleep(3.0)  # the request waits: no worker, no piece (its no-worker check comes after 10 s)
        t1 = time.time()
        touched = monitor.between(db, t0, t1, job_id)
        blocking = monitor.between(db, t0, t1, "XREAD", "BLOCK", clips.parts_key(job_id, 1))
        # about a read and a look at the job's state each block; a 50 ms poll made 120 here
        assert 1 <= len(blocking) and len(touched) <= 2 * ((t1 - t0) / BLOCK_S + 2), touched
        assert answer.came.empty()  # nothing sent before the first audio
        late, at = [], 0
        for n in range(3):
            time.sleep(random.uniform(0.1, BLOCK_S))  # anywhere in a block
            pcm = bytes([n + 1, 0]) * 1000
            written = time.monotonic()
            clips.put_piece(r, job_id, 1, at, pcm)
            at += len(pcm)
            came, data = answer.next()
            while pcm not in data:  # the first: the answer's headers come first
                came, more = answer.next()
                assert more, "the server closed the answer"
                data += more
            late.append(came - written)
        # woken by each piece, not by the end of a block: a read that polled once a block would take
        # half a block on the median
        assert statistics.median(late) < BLOCK_S / 2, late
        answer.close()
        wait_until(lambda: not r.exists(clips.parts_key(job_id, 1)), 30, "the parts stream to go")
    finally:
        monitor.close()
        logs = s.close()
        r.close()
    assert "Traceback" not in logs
    print(
        f"{server}: {len(touched)} commands on the clip in {t1 - t0:.1f} s of waiting; pieces came after "
        f"{', '.join(f'{x * 1000:.0f}' for x in late)} ms"
    )


def test_a_client_that_goes_away_leaves_no_parts_stream_behind(checkpoint, voice_wav):
    s = serve(checkpoint)
    r, _ = client_of(s, None)
    try:
        add_voice(s, voice_wav)
        early = Raw(s, "Gone before a word.")  # away while it waits for the first audio
        first = the_clip(r)
        early.close()
        wait_until(
            lambda: not r.exists(clips.parts_key(first, 1)) and state(r, first) == "canceled",
            30,
            "the first request's stream to go and its clip to be canceled",
        )
        clips.put_piece(r, first, 1, 0, b"\x01\x00" * 100)  # a worker still speaking it: nothing is made
        assert not r.exists(clips.parts_key(first, 1))

        later = Raw(s, "Gone in the middle.")  # away while its audio streams
        second = the_clip(r, but=(first,))
        clips.put_piece(r, second, 1, 0, b"\x02\x00" * 1000)
        _, data = later.next()
        while b"\x02\x00" * 100 not in data:
            data += later.next()[1]
        later.close()
        wait_until(
            lambda: not r.exists(clips.parts_key(second, 1)) and state(r, second) == "canceled",
            30,
            "the second request's stream to go and its clip to be canceled",
        )
        clips.put_piece(r, second, 1, 2000, b"\x02\x00" * 100)
        assert r.keys(f"{clips.parts_key('*', 1)}") == []
    finally:
        logs = s.close()
        r.close()
    assert "Traceback" not in logs


SENTENCES = 60


def test_a_books_clip_watch_reads_the_queue_when_a_clip_is_signalled(checkpoint, voice_wav):
    s = serve(checkpoint).with_worker()
    r, db = client_of(s, None)
    high = rq_queue(r, queue_for("narrate", "high")).key
    monitor = Monitor(r)
    try:
        add_voice(s, voice_wav)
        book = post_book(s, SENTENCES)

        def reading() -> bool:
            now = s.get(f"/v1/narrations/{book['id']}").json()
            return now["status"] == "in_progress" and now["progress"]["sentences_done"] > 0

        wait_until(reading, 120, "the book's first batch", poll=0.1)
        t0 = time.time()
        time.sleep(3.0)
        t1 = time.time()
        idle = monitor.between(db, t0, t1, "LRANGE", high)
        assert len(idle) <= (t1 - t0) / WATCH_S + 1, idle  # a poll every 0.1 s made 30 here
        t2 = time.time()
        speech = s.post(
            "/v1/audio/speech",
            json={"model": "tts-1", "voice": "alice", "input": "Meanwhile, hello.", "response_format": "pcm"},
        )
        t3 = time.time()
        assert speech.status_code == 200 and len(speech.content) > 0
        looked = monitor.between(db, t2, t3, "LRANGE", high)
        assert 1 <= len(looked) <= (t3 - t2) / WATCH_S + 3, looked  # woken by its signal
        during = s.get(f"/v1/narrations/{book['id']}").json()
        assert during["status"] == "in_progress", during  # it rode along: answered while the book ran on
    finally:
        monitor.close()
        logs = s.close()
        r.close()
    assert f"job {book['id']} takes clip job narrate-clip-" in logs, logs
    assert "Traceback" not in logs
    print(
        f"the watch read the queue {len(idle)} times in {t1 - t0:.1f} s without clips, {len(looked)} times "
        f"in the {t3 - t2:.2f} s of a speech request riding along"
    )


def test_a_server_told_to_stop_does_not_wait_for_the_clips_its_requests_wait_for(checkpoint, voice_wav):
    # The worker reads a book and neither takes the clip along nor yields: the clip would wait for the book.
    s = serve(checkpoint, NARRATE_CLIP_RIDE="0", NARRATE_CLIP_YIELD_S="0").with_worker()
    r, _ = client_of(s, None)
    try:
        add_voice(s, voice_wav)
        book = post_book(s, 2 * SENTENCES)
        wait_until(
            lambda: s.get(f"/v1/narrations/{book['id']}").json()["status"] == "in_progress",
            120,
            "the book to start",
            poll=0.1,
        )
        waiting = Raw(s, "Waiting for the book.")
        clip = the_clip(r)
        time.sleep(BLOCK_S)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=60)
        stopped = time.monotonic() - t0
        _, said = waiting.next()
        while b"}" not in said:
            more = waiting.next()[1]
            assert more, said
            said += more
        assert b" 503 " in said.split(b"\r\n")[0] and b"the server is stopping" in said, said
        assert state(r, clip) == "canceled" and not r.exists(clips.parts_key(clip, 1))
        assert state(r, book["id"]) == "started", "the book ended first: the stop was not tested"
    finally:
        logs = s.close()
        r.close()
    assert stopped < 5 * BLOCK_S + 5, stopped  # before: the book's end
    assert "Traceback" not in logs
    print(f"narrate serve stopped {stopped:.2f} s after SIGTERM, a speech request waiting")


def _wav(pcm: bytes) -> bytes:
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(24_000)
        w.writeframes(pcm)
    return out.getvalue()


def test_identical_requests_share_a_clip_and_one_hang_up_cuts_no_one_short(checkpoint, voice_wav):
    """The replay of the hostile probe: 40 identical speech requests (the same text: one clip job for all), 20 of
    them hang up while the audio streams. The clip is neither cancelled nor its stream removed while a request
    waits for it: each of the 20 others gets the whole audio (before: a truncated 200, a 502 "canceled" or a 500),
    and once the last is answered the clip's stream and count are gone."""
    import requests

    s = serve(checkpoint)  # no worker: the test speaks the clip as a worker would
    r, _ = client_of(s, None)
    text = "One and the same line, asked forty times."
    first, rest = b"\x03\x00" * 4000, b"\x04\x00" * 6000
    kept: list[tuple[int, bytes] | str] = []

    def keep_one() -> None:
        try:
            got = requests.post(
                f"{s.url}/v1/audio/speech",
                timeout=120,
                json={"model": "tts-1", "voice": "alice", "input": text, "response_format": "pcm"},
            )
            kept.append((got.status_code, got.content))
        except requests.RequestException as e:
            kept.append(repr(e))

    try:
        add_voice(s, voice_wav)
        leaving = [Raw(s, text) for _ in range(20)]
        staying = [threading.Thread(target=keep_one) for _ in range(20)]
        for t in staying:
            t.start()
        job_id = the_clip(r)
        count = clips.waiters_key(job_id)
        wait_until(lambda: int(r.get(count) or 0) == 40, 60, "the 40 requests to hold the clip")
        clips.put_piece(r, job_id, 1, 0, first)
        for raw in leaving:  # each has its first audio, then hangs up
            _, data = raw.next()
            while first[:200] not in data:
                data += raw.next()[1]
        for raw in leaving:
            raw.close()
        wait_until(lambda: int(r.get(count) or 0) == 20, 30, "the 20 that left to let the clip go")
        time.sleep(BLOCK_S)
        assert state(r, job_id) == "queued" and r.exists(clips.parts_key(job_id, 1))
        clips.put_piece(r, job_id, 1, len(first), rest)
        clips.put_clip(r, job_id, 1, _wav(first + rest), 600)
        for t in staying:
            t.join(60)
        assert kept == [(200, first + rest)] * 20, [k if isinstance(k, str) else (k[0], len(k[1])) for k in kept]
        wait_until(
            lambda: not r.exists(count) and not r.exists(clips.parts_key(job_id, 1)),
            30,
            "the clip's count and stream to go with the last request",
        )
    finally:
        logs = s.close()
        r.close()
    assert "Traceback" not in logs
