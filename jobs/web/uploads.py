"""Multipart uploads streamed to disk: each file part (and a `text` field) goes to its own file in a
private folder (under NARRATE_HOME, mode 0700) as it arrives, never whole in memory, each within the
cap the CLI's checks use for that kind of input (documents, voice samples, covers, lexicons);
the folder is removed when the request ends. The files are then read by the same code as the
CLI's (nothing is enqueued before every one is checked); error messages name the upload, never
the folder. A field that takes one value given twice is a 400 naming it.

Each server's folders carry its token (``uploads/up-TOKEN-RANDOM``), and the server holds a lock
file of that name (``uploads.owners/TOKEN``, flock: let go by the kernel when the process dies, on
Linux and macOS alike) for as long as it runs. At start-up a server removes only what no live
server owns (`Owner.sweep`): the folders of a token whose lock nobody holds (a killed server's),
and the token-less folders of an older narrate once they are older than NARRATE_SERVE_BODY_S (no
body takes longer). A second `narrate serve` on the same home leaves the first one's uploads
alone."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import parse_qsl

from narrate.jobs.audio.bookmeta import MAX_COVER_BYTES
from narrate.jobs.documents.lexicon import MAX_LEXICON_BYTES
from narrate.jobs.server.localstate import lock_held
from narrate.jobs.settings import MAX_DOCUMENT_BYTES, MAX_VOICE_BYTES
from narrate.jobs.web.errors import ApiError
from narrate.jobs.xmltext import without_bidi

if TYPE_CHECKING:
    from starlette.requests import Request

MAX_DOCUMENTS = 16
FILE_CAPS = {
    "file": MAX_DOCUMENT_BYTES,
    "text": MAX_DOCUMENT_BYTES,  # a text field is a document too: on disk, not in memory
    "voice_sample": MAX_VOICE_BYTES,
    "audio_sample": MAX_VOICE_BYTES,
    "cover": MAX_COVER_BYTES,
    "lexicon": MAX_LEXICON_BYTES,
}
FIELD_CAP = 64 * 1024  # any other field: an option
MAX_PARTS = MAX_DOCUMENTS + 64
# The largest multipart body: every document at its cap, the other files at theirs, the fields.
MULTIPART_CAP = MAX_DOCUMENTS * MAX_DOCUMENT_BYTES + sum(FILE_CAPS.values()) + 64 * FIELD_CAP
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:]+")
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z-]*[a-z])")
OWNERS = "uploads.owners"  # beside uploads/: one lock file per live server, named by its token
_OWNED = re.compile(r"^up-(\d+-[0-9a-f]{8})-[A-Za-z0-9_]+$")  # up-TOKEN-RANDOM (tempfile's random part)


SHOWN_TEXT_BYTES = 2 * 1024 * 1024  # a pasted text a refused form shows again (a longer one: choose it as a file)


@dataclass
class Upload:
    field: str
    name: str  # the file name as sent, made safe (no folders, no control characters)
    path: Path  # where it was written
    size: int


@dataclass
class Form:
    folder: Path
    fields: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[Upload]] = field(default_factory=dict)

    def value(self, name: str) -> str | None:
        """The value of a field that takes one (None: not sent; an empty field counts as not sent);
        sent more than once: ApiError 400 naming it."""
        values = self.fields.get(name)
        if values and len(values) > 1:
            raise ApiError(400, f"field {name[:40]} is given {len(values)} times; give it once", name)
        return values[0] if values and values[0] != "" else None

    def shown(self, name: str) -> str:
        """A field's last value as a page shows it again ("" if not sent), never refused; the `text` field
        (kept on disk) up to SHOWN_TEXT_BYTES, so a refused form gives a person's pasted text back."""
        typed = self.files.get(name) if name == "text" else None
        if typed and typed[-1].size <= SHOWN_TEXT_BYTES:
            with contextlib.suppress(OSError):
                return typed[-1].path.read_text(encoding="utf-8", errors="replace")
        return (self.fields.get(name) or [""])[-1]

    def flag(self, name: str) -> bool:
        raw = (self.value(name) or "").strip().lower()
        if raw in ("", "false", "0", "no", "off"):
            return False
        if raw in ("true", "1", "yes", "on"):
            return True
        raise ApiError(400, f"{name}={raw[:40]!r}: give true or false", name)

    def file(self, name: str) -> Upload | None:
        got = self.files.get(name) or []
        if len(got) > 1:
            raise ApiError(400, f"{name}: give one file, not {len(got)}", name)
        return got[0] if got else None

    def plain(self, message: str) -> str:
        """An error message as the request reads: the upload folder taken out (it names the files as
        they were sent), the CLI's options named as the form's fields (--max-part-hours: max_part_hours) but in a
        command quoted in backticks."""
        for folder in dict.fromkeys((str(self.folder), os.path.realpath(self.folder))):
            message = re.sub(re.escape(f"{folder}{os.sep}") + r"\d+" + re.escape(os.sep), "", message)
            message = message.replace(folder, "upload")
        parts = message.split("`")  # a command quoted in backticks is left as it is (it runs on the server's host)
        return "`".join(
            _OPTION.sub(lambda m: m.group(1).replace("-", "_"), p) if i % 2 == 0 else p for i, p in enumerate(parts)
        )

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def safe_name(raw: str, fallback: str) -> str:
    """A file name as sent, without folders, control or bidi characters (its extension picks the reader)."""
    base = re.split(r"[/\\]", without_bidi(raw))[-1] if raw else ""
    name = _UNSAFE.sub("_", base).strip(" .")[:120]
    return name or fallback


class Owner:
    """One server's claim on HOME/uploads: its token names every folder it makes there, and the lock
    file of that name under HOME/uploads.owners is held (flock) for as long as the server runs."""

    def __init__(self, home: Path) -> None:
        home = Path(home).expanduser()
        self.root = home / "uploads"
        self.locks = home / OWNERS
        self.token: str | None = None
        self._fd: int | None = None
        self._mutex = threading.Lock()

    def claim(self) -> str:
        """This server's token, its lock taken on first use (a lock file swept away by another server
        between its creation and its lock is given up for a new one)."""
        with self._mutex:
            while self.token is None:
                self.locks.mkdir(parents=True, exist_ok=True, mode=0o700)
                token = f"{os.getpid()}-{secrets.token_hex(4)}"
                path = self.locks / token
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if os.stat(path).st_ino != os.fstat(fd).st_ino:
                        raise FileNotFoundError(path)
                except OSError:  # another server's sweep held or removed it meanwhile: another token
                    os.close(fd)
                    continue
                self.token, self._fd = token, fd
            return self.token

    def folder(self) -> Path:
        """A new private folder (0700) for one request's uploads."""
        token = self.claim()
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return Path(tempfile.mkdtemp(prefix=f"up-{token}-", dir=self.root))

    def sweep(self, max_age_s: float) -> list[Path]:
        """Remove what no live server owns: the folders of a token whose lock nobody holds (a killed
        server's) and those lock files, and folders of an older narrate (no token) older than
        `max_age_s` (NARRATE_SERVE_BODY_S). The folders removed."""
        mine = self.claim()
        removed, live = [], {mine: True}
        for entry in sorted(self.root.glob("up-*")) if self.root.is_dir() else []:
            owned = _OWNED.match(entry.name)
            if owned is None:
                with contextlib.suppress(OSError):
                    if time.time() - entry.lstat().st_mtime <= max_age_s:
                        continue
            else:
                token = owned.group(1)
                if token not in live:
                    live[token] = lock_held(self.locks / token)
                if live[token]:
                    continue
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
        for lock in sorted(self.locks.iterdir()) if self.locks.is_dir() else []:
            if lock.name != mine:
                _remove_if_free(lock)
        return removed

    def release(self) -> None:
        """Remove this server's folders, then let go of its lock (the server is stopping)."""
        with self._mutex:
            if self.token is None or self._fd is None:
                return
            for entry in self.root.glob(f"up-{self.token}-*"):
                shutil.rmtree(entry, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                (self.locks / self.token).unlink()
            os.close(self._fd)
            self.token, self._fd = None, None


def _remove_if_free(lock: Path) -> None:
    """Remove a lock file that no process holds (its server is gone), holding it while it goes."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.unlink()
    except OSError:  # held: a live server's
        pass
    finally:
        os.close(fd)


_owners: dict[Path, Owner] = {}
_owners_mutex = threading.Lock()


def owner_of(home: Path) -> Owner:
    """This process's Owner of `home`'s uploads (one per home)."""
    key = Path(home).expanduser().absolute()
    with _owners_mutex:
        return _owners.setdefault(key, Owner(key))


def private_folder(home: Path) -> Path:
    return owner_of(home).folder()


class _Parts:
    """python-multipart's callbacks: each part to a file of its own, or to a bounded field."""

    def __init__(self, form: Form) -> None:
        self.form = form
        self.count = 0
        self._header_name = b""
        self._header_value = b""
        self._disposition = b""
        self._name = ""
        self._filename: str | None = None
        self._data = bytearray()
        self._out: IO[bytes] | None = None
        self._size = 0
        self._cap = FIELD_CAP
        self._path: Path | None = None

    def on_part_begin(self) -> None:
        self._disposition, self._data, self._size, self._out, self._path = b"", bytearray(), 0, None, None
        self.count += 1
        if self.count > MAX_PARTS:
            raise ApiError(413, f"more than {MAX_PARTS} parts in one request; send fewer documents at once")

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        if self._header_name.strip().lower() == b"content-disposition":
            self._disposition = self._header_value
        self._header_name, self._header_value = b"", b""

    def on_headers_finished(self) -> None:
        from python_multipart.multipart import parse_options_header

        _, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise ApiError(400, "a multipart part has no name (Content-Disposition: form-data; name=...)")
        self._name = options[b"name"].decode("utf-8", "replace")
        raw_filename = options.get(b"filename")
        self._filename = raw_filename.decode("utf-8", "replace") if raw_filename is not None else None
        if self._filename is not None or self._name == "text":
            if self._name not in FILE_CAPS:
                raise ApiError(400, f"{self._name[:40]!r} is not a file field of this request; see /docs", self._name)
            documents = len(self.form.files.get("file", []))
            if self._name == "file" and documents >= MAX_DOCUMENTS:
                raise ApiError(413, f"more than {MAX_DOCUMENTS} documents in one request; send them in batches")
            fallback = "text.txt" if self._name == "text" else {"file": "document.txt"}.get(self._name, self._name)
            name = "text.txt" if self._name == "text" else safe_name(self._filename or "", fallback)
            folder = self.form.folder / str(self.count)
            folder.mkdir(mode=0o700)
            self._path = folder / name
            self._out = open(self._path, "xb")  # noqa: SIM115 - closed in on_part_end or by `close`
            self._cap = FILE_CAPS[self._name]
        else:
            self._cap = FIELD_CAP

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        self._size += end - start
        if self._size > self._cap:
            what = f"file {self._filename or self._name}" if self._out is not None else f"field {self._name}"
            limit = f"{self._cap // 2**20} MiB" if self._cap >= 2**20 else f"{self._cap // 1024} KiB"
            raise ApiError(413, f"{what} is larger than {limit}, the limit", self._name)
        if self._out is not None:
            self._out.write(data[start:end])
        else:
            self._data.extend(data[start:end])

    def on_part_end(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
            assert self._path is not None
            if self._size == 0 and (self._filename == "" or self._name == "text"):
                self._path.unlink()  # a browser's empty file input or empty text box: not sent
                return
            upload = Upload(self._name, self._path.name, self._path, self._size)
            self.form.files.setdefault(self._name, []).append(upload)
        else:
            try:
                value = self._data.decode("utf-8")
            except UnicodeDecodeError:
                raise ApiError(400, f"field {self._name} is not UTF-8 text", self._name) from None
            self.form.fields.setdefault(self._name, []).append(value)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


async def read_form(request: Request, home: Path) -> Form:
    """The request's multipart form, its files on disk in a private folder (remove it with
    ``Form.remove``; it is removed here when the form cannot be read)."""
    from python_multipart.exceptions import FormParserError
    from python_multipart.multipart import MultipartParser, parse_options_header

    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind == b"application/x-www-form-urlencoded":  # fields only (curl -d): a text, no files
        raw = await request.body()
        form = Form(private_folder(home))
        try:
            return _fields(raw, form)
        except BaseException:
            form.remove()
            raise
    if kind != b"multipart/form-data" or b"boundary" not in params:
        raise ApiError(415, "send the request as multipart/form-data (curl -F name=value, -F file=@book.epub)")
    form = Form(private_folder(home))
    parts = _Parts(form)
    callbacks = {name: getattr(parts, name) for name in dir(_Parts) if name.startswith("on_")}
    try:
        parser = MultipartParser(params[b"boundary"], callbacks)  # type: ignore[arg-type]
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except FormParserError:
        parts.close()
        form.remove()
        raise ApiError(400, "the multipart body is malformed; send it as multipart/form-data") from None
    except BaseException:
        parts.close()
        form.remove()
        raise
    return form


def _fields(raw: bytes, form: Form) -> Form:
    """An urlencoded body (its size capped by the guard): `text` to a file, the rest as fields (the
    caller removes the form's folder when this raises)."""
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise ApiError(400, "the form is not UTF-8 text") from None
    for number, (name, value) in enumerate(pairs, start=1):
        if name == "text":
            folder = form.folder / str(number)
            folder.mkdir(mode=0o700)
            path = folder / "text.txt"
            path.write_bytes(value.encode())
            form.files.setdefault("text", []).append(Upload("text", path.name, path, path.stat().st_size))
        elif name in FILE_CAPS:
            raise ApiError(415, f"{name} is a file: send the request as multipart/form-data (curl -F {name}=@FILE)")
        elif len(value) > FIELD_CAP:
            raise ApiError(413, f"field {name[:40]} is larger than {FIELD_CAP // 1024} KiB, the limit", name)
        else:
            form.fields.setdefault(name, []).append(value)
    return form
