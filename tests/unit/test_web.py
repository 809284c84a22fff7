"""`narrate serve`'s own logic, in this process: the guard's rules (Host, the key, Origin and
Sec-Fetch-Site), binds off loopback, callback hosts, upload names and error messages, the lines
a speech request is spoken in, OpenAI model names, data: URL samples, the status words, and a
voice name from the API never read as a file of the server."""

from __future__ import annotations

import base64
import io
import wave

import pytest
from narrate.jobs.errors import BadInput, JobNotFound
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.queue.states import ENDED_API, State
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import choose
from narrate.jobs.web import callbacks, choices, speech_clips, views
from narrate.jobs.web.app import check_exposure
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.guard import BodyRules, Guard, served_hosts
from narrate.jobs.web.uploads import Form, safe_name

KEY = "k" * 32


def guard(key: str | None = None, configured: tuple[str, ...] = ()) -> Guard:
    async def app(scope, receive, send) -> None:  # never reached: only `check` is called
        raise AssertionError

    return Guard(app, served_hosts("127.0.0.1", 8000, configured), key, BodyRules(), 1 << 20)


def refused(g: Guard, method: str, **headers: str) -> tuple[int, str] | None:
    said = g.check(method, {"host": "127.0.0.1:8000", **{k.replace("_", "-"): v for k, v in headers.items()}})
    return (said[0], said[1]) if said else None


def test_the_host_header_is_one_of_the_servers_names():
    g = guard(configured=("narrate.example.com",))
    for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "narrate.example.com", "narrate.example.com:8000"):
        assert refused(g, "GET", host=host) is None, host
    for host in ("evil.example:8000", "127.0.0.1:9000", "", "narrate.example.com.evil:8000"):
        assert refused(g, "GET", host=host)[0] == 400, host


def test_a_key_is_needed_once_set_compared_whole():
    g = guard(KEY)
    assert refused(g, "GET")[0] == 401
    assert refused(g, "GET", authorization=f"Bearer {KEY}") is None
    for wrong in (f"Bearer {KEY[:-1]}", f"Bearer {KEY}x", KEY, f"Basic {KEY}", "Bearer "):
        assert refused(g, "GET", authorization=wrong)[0] == 401, wrong
    assert refused(guard(), "GET", authorization="Bearer anything") is None  # no key set: not asked for


def test_other_sites_cannot_post_or_read():
    g = guard()
    assert refused(g, "POST") is None  # curl, the openai SDK: no Origin, not a browser
    assert refused(g, "POST", origin="http://127.0.0.1:8000") is None
    assert refused(g, "POST", origin="http://evil.example")[0] == 403
    assert refused(g, "POST", origin="null")[0] == 403
    assert refused(g, "POST", referer="http://evil.example/page")[0] == 403
    assert refused(g, "DELETE", sec_fetch_site="cross-site")[0] == 403
    assert refused(g, "POST", sec_fetch_site="same-site", origin="http://127.0.0.1:8000")[0] == 403
    assert refused(g, "GET", origin="http://evil.example")[0] == 403
    assert refused(g, "GET", sec_fetch_site="cross-site", sec_fetch_mode="cors")[0] == 403
    assert refused(g, "GET", sec_fetch_site="cross-site", sec_fetch_mode="navigate") is None  # a link followed


def test_off_loopback_a_long_key_is_required():
    check_exposure("127.0.0.1", None)
    check_exposure("::1", None)
    check_exposure("0.0.0.0", KEY)
    for bind, key, says in (
        ("0.0.0.0", None, "without an API key"),
        ("192.168.1.5", None, "NARRATE_API_KEY"),
        ("127.0.0.1", "   ", "blank"),
        ("0.0.0.0", "short", "shorter than 16"),
    ):
        with pytest.raises(BadInput, match=says):
            check_exposure(bind, key)
    with pytest.raises(BadInput, match="NARRATE_SERVE_HOSTS"):
        served_hosts("0.0.0.0", 8000, ["bad name!"])


def test_callbacks_go_only_to_listed_hosts():
    hosts = ("hooks.example.com", "127.0.0.1:9000")
    assert callbacks.check("https://hooks.example.com/narrate?x=1", hosts)
    assert callbacks.check("http://127.0.0.1:9000/done", hosts)
    for url, says in (
        ("http://127.0.0.1:9001/", "not one the server may call"),
        ("http://169.254.169.254/latest", "NARRATE_CALLBACK_HOSTS"),
        ("ftp://hooks.example.com/", "http:// or https://"),
        ("hooks.example.com", "http:// or https://"),
        ("http://hooks.example.com/a b", "not a URL"),
    ):
        with pytest.raises(ApiError, match=says) as e:
            callbacks.check(url, hosts)
        assert e.value.status == 400 and e.value.param == "callback_url"
    with pytest.raises(ApiError, match="allowed: none"):
        callbacks.check("http://127.0.0.1:9000/", ())


def test_upload_names_and_error_messages(tmp_path):
    assert safe_name("../../etc/passwd", "x") == "passwd"
    assert safe_name("C:\\books\\My Book.epub", "x") == "My Book.epub"
    assert safe_name("a\x1b[31mb.txt", "x") == "a_[31mb.txt"
    assert safe_name("..", "document.txt") == "document.txt" and safe_name("", "text.txt") == "text.txt"
    form = Form(tmp_path / "up-1")
    said = f"document {tmp_path}/up-1/3/book.txt is larger than 20 MiB; --max-part-hours 0: give hours; --at 'x'"
    assert form.plain(said) == "document book.txt is larger than 20 MiB; max_part_hours 0: give hours; at 'x'"
    form.fields = {"consent": ["yes"], "overwrite": [""], "bad": ["maybe"]}
    assert form.flag("consent") and not form.flag("overwrite") and not form.flag("missing")
    with pytest.raises(ApiError, match="give true or false"):
        form.flag("bad")


def test_a_speech_input_is_spoken_in_lines():
    lines, language = speech_clips.lines_of("One. Two is here. Three!\n\nFour, and five.", "auto")
    assert lines == ["One.", "Two is here. Three! Four, and five."] and language == "en"
    long = " ".join(f"Sentence number {i} is a little longer than the others." for i in range(30))
    lines, _ = speech_clips.lines_of(long, "en")
    assert lines[0] == "Sentence number 0 is a little longer than the others." and len(lines) > 2
    assert all(len(line) <= 400 for line in lines) and " ".join(lines) == long


def test_model_names_and_data_url_samples(tmp_path):
    s = Settings(model="/srv/models/tiny")
    assert [choices.check_model(m, s) for m in ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "/srv/models/tiny")] == [
        None
    ] * 4
    assert choices.check_model("mlx-community/Qwen3-TTS-12Hz-0.6B-Base", s) == "mlx-community/Qwen3-TTS-12Hz-0.6B-Base"
    for other in ("/etc", "../models", "~/x"):
        with pytest.raises(ApiError, match="unknown model"):
            choices.check_model(other, s)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(24000), w.writeframes(b"\0\0" * 10)
    path = choices.sample_from_data_url("data:audio/wav;base64," + base64.b64encode(buf.getvalue()).decode(), tmp_path)
    assert path.parent == tmp_path and path.read_bytes() == buf.getvalue()
    for bad, status in (("data:audio/wav,raw", 400), ("data:audio/wav;base64,@@", 400), ("http://x/y.wav", 400)):
        with pytest.raises(ApiError) as e:
            choices.sample_from_data_url(bad, tmp_path)
        assert e.value.status == status
    with wave.open(io.BytesIO(speech_clips.wav_header(10) + b"\0\0" * 10)) as w:
        assert w.getnframes() == 10 and w.getframerate() == 24000


def test_status_words_and_ids():
    assert [
        State.of(s).api
        for s in ("queued", "deferred", "scheduled", "started", "finished", "failed", "stopped", "canceled", "unknown")
    ] == ["queued", "queued", "scheduled", "in_progress", "completed", "failed", "failed", "cancelled", "queued"]
    assert [State.from_api(s) for s in ("in_progress", "completed", "cancelled", "queued")] == [
        "started",
        "finished",
        "canceled",
        "queued",
    ]
    assert ENDED_API == ("completed", "failed", "cancelled")
    assert State.of("a-state-of-a-later-rq").api == "queued"  # a page never fails on a word it does not know
    with pytest.raises(ValueError, match="not a narration's status"):
        State.from_api("started")  # narrate's word, not the API's
    assert views.check_id("narrate-0123") == "narrate-0123"
    for bad in ("narrate-clip-0123", "rq:job:x", "x" * 300):
        with pytest.raises(JobNotFound):
            views.check_id(bad)


def test_a_voice_name_from_the_api_is_never_a_file_here(tmp_path, monkeypatch, voice_wav):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "alice").write_bytes(voice_wav.read_bytes())
    ffmpeg = ffmpeg_exe()
    assert choose(None, "alice", None, ffmpeg).sample is not None  # the CLI: a file here is a sample
    with pytest.raises(BadInput, match="no saved voice named 'alice'.*a data: URL or an upload"):
        choose(None, "alice", None, ffmpeg, files=False)
    with pytest.raises(BadInput, match="is not a voice name"):
        choose(None, str(voice_wav), None, ffmpeg, files=False)


def test_which_jobs_yield_their_worker_to_clip_jobs():
    import threading
    from types import SimpleNamespace as Fake

    from narrate.jobs.api.submit import JOB_FUNCTION
    from narrate.jobs.fanout.split import PART_FUNCTION
    from narrate.jobs.voices.clips import CLIP_FUNCTION
    from narrate.worker.process import clip_watch

    book, part = Fake(func_name=JOB_FUNCTION, origin="narrate"), Fake(func_name=PART_FUNCTION, origin="narrate-low")
    assert clip_watch.yields(book) and clip_watch.yields(part)
    assert not clip_watch.yields(Fake(func_name=CLIP_FUNCTION, origin="narrate-high"))
    assert not clip_watch.yields(Fake(func_name=JOB_FUNCTION, origin="narrate-high"))  # high jobs wait their turn
    queues = [Fake(name="narrate-high"), Fake(name="narrate"), Fake(name="narrate-low")]

    def ctx(job):
        return Fake(job=job, stop=threading.Event(), settings=Fake(clip_yield_s=10))

    assert clip_watch.watch(None, queues[1:], ctx(book), "w") is None  # `narrate run`: no high queue
    assert clip_watch.watch(None, queues, ctx(Fake(func_name=CLIP_FUNCTION, origin="narrate-high")), "w") is None
