"""Multipart uploads streamed to disk: each file part (and a `text` field) goes to its own file in a
private folder (under NARRATE_HOME, mode 0700) as it arrives, never whole in memory, each within the
cap the CLI's checks use for that kind of input (documents, voice samples, covers, lexicons);
the folder is removed when the request ends. The files are then read by the same code as the
CLI's (nothing is enqueued before every one is checked); error messages name the upload, never
the folder."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import parse_qsl

from narrate.jobs.audio.bookmeta import MAX_COVER_BYTES
from narrate.jobs.documents.lexicon import MAX_LEXICON_BYTES
from narrate.jobs.settings import MAX_DOCUMENT_BYTES, MAX_VOICE_BYTES
from narrate.jobs.web.errors import ApiError

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
        """The last value of a field (None: not sent; an empty field counts as not sent)."""
        values = self.fields.get(name)
        return values[-1] if values and values[-1] != "" else None

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
        they were sent), the CLI's options named as the form's fields (--max-part-hours: max_part_hours)."""
        message = re.sub(re.escape(f"{self.folder}{os.sep}") + r"\d+" + re.escape(os.sep), "", message)
        message = message.replace(str(self.folder), "upload")
        return _OPTION.sub(lambda m: m.group(1).replace("-", "_"), message)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def safe_name(raw: str, fallback: str) -> str:
    """A file name as sent, without folders or control characters (its extension picks the reader)."""
    base = re.split(r"[/\\]", raw)[-1] if raw else ""
    name = _UNSAFE.sub("_", base).strip(" .")[:120]
    return name or fallback


def private_folder(home: Path) -> Path:
    root = Path(home).expanduser() / "uploads"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Path(tempfile.mkdtemp(prefix="up-", dir=root))


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
        return _fields(await request.body(), Form(private_folder(home)))
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
    """An urlencoded body (its size capped by the guard): `text` to a file, the rest as fields."""
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        form.remove()
        raise ApiError(400, "the form is not UTF-8 text") from None
    for name, value in pairs:
        if name == "text":
            folder = form.folder / str(len(form.files) + 1)
            folder.mkdir(mode=0o700)
            path = folder / "text.txt"
            path.write_bytes(value.encode())
            form.files.setdefault("text", []).append(Upload("text", path.name, path, path.stat().st_size))
        elif name in FILE_CAPS:
            form.remove()
            raise ApiError(415, f"{name} is a file: send the request as multipart/form-data (curl -F {name}=@FILE)")
        elif len(value) > FIELD_CAP:
            form.remove()
            raise ApiError(413, f"field {name[:40]} is larger than {FIELD_CAP // 1024} KiB, the limit", name)
        else:
            form.fields.setdefault(name, []).append(value)
    return form
