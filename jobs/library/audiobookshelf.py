"""Telling an Audiobookshelf server about an exported book (`--abs-url URL`, the token in
NARRATE_ABS_TOKEN, sent as ``Authorization: Bearer``): after an export into a library folder it
watches, a scan of that library (`POST /api/libraries/{id}/scan`: a watcher misses network drives);
without a library folder, the book's files uploaded (`POST /api/upload`, multipart: title, author,
series, library, folder and the files, streamed from disk), as advplyr/audiobookshelf
server/controllers/MiscController.js `handleUpload` reads them, once the server said that the
folder it files them in (Author/Series/Title) is not taken (2.36's upload writes into a folder that
exists, over or beside another book's files), then a scan of that library asked for: the upload
only moves the files into the library's folder (2.36's handleUpload scans nothing), so with the
library's folder watcher off the book would not appear until the next scheduled scan.
The scan (server/controllers/LibraryController.js `scan`) needs an admin's token: where it is
refused, the upload still counts and the result says so, with what to do. Standard library HTTP
only. Checked against a running Audiobookshelf 2.36.0: tests/system/test_audiobookshelf_server.py."""

from __future__ import annotations

import json
import mimetypes
import re
import secrets
import unicodedata
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.library.metadata import BookInfo

TIMEOUT_S = 60.0
CHUNK = 1 << 20


class AbsError(NarrateError):
    """The Audiobookshelf server refused or could not be reached (the export itself stands)."""


def check_url(url: str, option: str = "--abs-url") -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"{option} {url[:100]!r}: give the server's http(s) address, e.g. http://abs.local:13378")
    return url.strip().rstrip("/")


def _call(method: str, url: str, token: str, body: Any = None, headers: dict[str, str] | None = None) -> bytes:
    req = urllib.request.Request(
        url, data=body, method=method, headers={"Authorization": f"Bearer {token}", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as answer:  # noqa: S310 - http(s) only (check_url)
            return bytes(answer.read())
    except urllib.error.HTTPError as e:
        said = e.read()[:300].decode("utf-8", "replace").strip()
        hint = " (check NARRATE_ABS_TOKEN: an API token of a user who may upload)" if e.code in (401, 403) else ""
        raise AbsError(f"Audiobookshelf answered {e.code} to {method} {urlsplit(url).path}: {said}{hint}") from None
    except (urllib.error.URLError, OSError) as e:
        raise AbsError(f"cannot reach Audiobookshelf at {url}: {getattr(e, 'reason', e)}") from None


def library_and_folder(base: str, token: str, library_id: str | None) -> tuple[str, str, str]:
    """(library id, its first folder's id, that folder's path on the server): the one named, else the
    first book library."""
    try:
        libraries = json.loads(_call("GET", f"{base}/api/libraries", token))["libraries"]
    except (ValueError, KeyError, TypeError):
        raise AbsError(f"{base}/api/libraries did not answer as Audiobookshelf does") from None
    found = [
        lib for lib in libraries if (lib.get("id") == library_id if library_id else lib.get("mediaType") == "book")
    ]
    if not found or not found[0].get("folders"):
        said = f"no library {library_id!r}" if library_id else "no book library"
        raise AbsError(f"Audiobookshelf at {base} has {said} with a folder (set NARRATE_ABS_LIBRARY to its id)")
    folder = found[0]["folders"][0]
    return str(found[0]["id"]), str(folder["id"]), str(folder.get("fullPath") or "")


def abs_name(part: str) -> str:
    """A folder name as Audiobookshelf makes it of an upload's author, series and title
    (server/utils/fileUtils.js `sanitizeFilename`, without its trim of names over 255 bytes)."""
    name = unicodedata.normalize("NFC", part).replace(":", " - ", 1)
    name = re.sub(r'[/?<>\\:*|"]|[\x00-\x1f\x80-\x9f]', "", name)
    name = "" if re.fullmatch(r"\.+", name) else name
    name = re.sub(r"^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$", "", name, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", re.sub(r"[. ]+$", "", name))


def upload_folder(info: BookInfo) -> str:
    """Where Audiobookshelf files an upload, relative to the library's folder: Author/Series/Title."""
    return "/".join(abs_name(p) for p in (", ".join(info.authors), info.series, info.title) if p)


def check_free(base: str, token: str, folder_path: str, info: BookInfo) -> None:
    """Refuse (AbsError) when the upload's folder is taken: Audiobookshelf (2.36) would answer 200
    and write the files into it, over another book's or beside them. Asked as its web client asks
    (`POST /api/filesystem/pathexists`); a server without that call (404) is not asked."""
    directory = upload_folder(info)
    if not folder_path or not directory:
        return
    body = json.dumps({"directory": directory, "folderPath": folder_path}).encode()
    try:
        said = json.loads(
            _call("POST", f"{base}/api/filesystem/pathexists", token, body, {"Content-Type": "application/json"})
        )
    except ValueError:
        return  # not an answer of this call: the upload says what the server makes of it
    except AbsError as e:
        if " 404 " in str(e):
            return
        raise
    if isinstance(said, dict) and said.get("exists"):
        held = f" (its book {said['libraryItemTitle']!r})" if said.get("libraryItemTitle") else ""
        raise AbsError(
            f"Audiobookshelf already has a folder {directory!r} in {folder_path}{held}: not uploaded, "
            "so that no book's files are replaced or mixed with these; remove or rename that folder "
            "in Audiobookshelf first, or export into its library folder with --library"
        )


def scan(base: str, token: str, library_id: str) -> None:
    _call("POST", f"{base}/api/libraries/{quote(library_id)}/scan", token)


def upload(base: str, token: str, library_id: str, folder_id: str, info: BookInfo, files: list[Path]) -> None:
    """The book's files in one multipart POST, each streamed from disk (Content-Length known up front)."""
    boundary = f"narrate-{secrets.token_hex(12)}"
    fields = {
        "title": info.title,
        "author": ", ".join(info.authors),
        "series": info.series,
        "library": library_id,
        "folder": folder_id,
    }
    head = b"".join(_part(boundary, name, None) + value.encode() + b"\r\n" for name, value in fields.items() if value)
    parts = [(_part(boundary, str(n), path), path) for n, path in enumerate(files)]
    tail = f"--{boundary}--\r\n".encode()
    length = len(head) + sum(len(p) + path.stat().st_size + 2 for p, path in parts) + len(tail)

    def body() -> Iterator[bytes]:
        yield head
        for preamble, path in parts:
            yield preamble
            with open(path, "rb") as f:
                while block := f.read(CHUNK):
                    yield block
            yield b"\r\n"
        yield tail

    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(length)}
    _call("POST", f"{base}/api/upload", token, body(), headers)


def _part(boundary: str, name: str, path: Path | None) -> bytes:
    if path is None:
        return f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    filename = path.name.replace('"', "'")
    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
        f"Content-Type: {kind}\r\n\r\n"
    ).encode()


def push(base: str, token: str | None, library_id: str | None, info: BookInfo, folder: Path, in_library: bool) -> str:
    """Scan (the folder is in a library the server watches) or upload the folder's files; what was done."""
    if not token:
        raise AbsError("--abs-url needs NARRATE_ABS_TOKEN (an Audiobookshelf API token) on the exporting host")
    lib, first_folder, folder_path = library_and_folder(base, token, library_id)
    if in_library:
        scan(base, token, lib)
        return f"Audiobookshelf library {lib} scanned"
    check_free(base, token, folder_path, info)
    upload(base, token, lib, first_folder, info, sorted(p for p in folder.iterdir() if p.is_file()))
    try:  # the upload put the files in the library's folder; a scan makes the book appear now
        scan(base, token, lib)
    except AbsError as e:
        admin = " (a scan needs an admin's token)" if " 403 " in str(e) else ""
        return (
            f"uploaded to Audiobookshelf library {lib}; warning: asking it to scan the library failed{admin}: "
            f"{e}; the book appears once the library is scanned (its watcher, a scheduled scan, or Scan in "
            "its library settings)"
        )
    return f"uploaded to Audiobookshelf library {lib} and its scan asked for"
