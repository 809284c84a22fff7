"""`narrate export JOB --library DIR`: a finished job's book as a library folder (jobs/library/layout.py)
holding its audio (tags set to agree with the folder; a book delivered as its read-along EPUB, `--format epub`:
that EPUB), its subtitles, its read-along files (the EPUB with
media overlays, the audiobook manifests and their table of contents, the word-level WebVTT: jobs/readalong),
`cover.jpg`/`cover.png`, `desc.txt`, `reader.txt`, `metadata.opf` and `metadata.json`. Every file is named
after the book's title as its audio is ("Title.m4b", "Title.epub", "Title.words.vtt", ...), and the manifests
and the table of contents point at the files by their new names.

The folder is written as a hidden one beside the books (`.narrate-export-...`, which Audiobookshelf
and Plex skip) and renamed into place when every file is on disk, so a library watcher never sees
half a book; a killed export leaves only a hidden folder, removed by the next export. It never
replaces a folder: the same job again is "already exported"; another book with the same folder
name gets " (2)" (then 3, ...), said in the result."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import redis
from narrate.jobs.audio.bookmeta import Tags, image_kind, series_parts
from narrate.jobs.audio.tagging import read_cover, write_tags
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.documents.documents import BookMeta, Document
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.library import layout as layouts
from narrate.jobs.library.metadata import BookInfo, abs_json, desc_txt, opf, reader_txt
from narrate.jobs.outputs import whereabouts
from narrate.jobs.outputs.ownership import sha256_file
from narrate.jobs.outputs.recorded import AUDIO, recorded
from narrate.jobs.server import store
from narrate.jobs.server.records import fetch
from rq.job import JobStatus

HIDDEN = ".narrate-export-"
MAX_EDITIONS = 99
# The read-along files a job writes beside its book (jobs/readalong/writer.py, jobs/task/stitcher.py), by what
# follows the book's stem in their names; the manifests and the table of contents name the others.
READALONG = (".epub", ".audiobook.json", ".publication.json", ".toc.html", ".words.vtt")
LINKING = (".audiobook.json", ".publication.json", ".toc.html")


@dataclass(frozen=True)
class Exported:
    folder: Path
    files: list[str]
    note: str  # "exported", "already exported", or which name it took instead


# (info, audio tracks, subtitles, cover, read-along files as (path, what follows the book's stem in its name))
Found = tuple[BookInfo, list[Path], list[Path], bytes | None, list[tuple[Path, str]]]


def book_info(r: redis.Redis, root: Path, job_id: str) -> Found:
    """What a finished job's folder holds and says, from its files under output root `root` on this
    host. Raises NarrateError saying what to do otherwise."""
    job = fetch(r, job_id)
    state = job.get_status(refresh=False)
    if state != JobStatus.FINISHED:  # jobs.api.library says more: this is the last guard
        raise BadInput(
            f"job {job_id} has not finished (it is {state.value if state else 'unknown'}); export it once it has"
        )
    result: dict[str, Any] = job.return_value(refresh=True) or {}
    spec = JobSpec.from_json(job.args[0])
    doc: Document | None = None
    with contextlib.suppress(LookupError):
        doc = store.get_document(r, spec.document)
    return info_of(r, root, job_id, spec, doc, result, (job.meta or {}).get("voice_name"), job.meta)


def info_of(
    r: redis.Redis,
    root: Path,
    job_id: str,
    spec: JobSpec,
    doc: Document | None,
    result: dict[str, Any],
    voice_name: str | None,
    job_meta: dict[str, Any] | None = None,
) -> Found:
    """`book_info` from what a worker has in hand when the job ends (the document, if still stored).
    The tracks: the book file; without one (`--split chapters`, or parts), the chapter files or parts."""
    files = recorded(r, root, job_id, result.get("output_relative") or spec.output)
    audio = [f for f in files if f.path.suffix.lower() in AUDIO]
    main = [f for f in files if f.relative == (result.get("output_relative") or spec.output)]  # an EPUB (epub)
    tracks = main or audio
    changed = bool(tracks) and any(f.sha256 and sha256_file(f.path) != f.sha256 for f in tracks)
    if not tracks or changed:  # why, in words: another host, another output root, changed or gone
        raise BadInput(whereabouts.diagnose(job_id, result, job_meta or {}, root, changed).message)
    meta = (doc.meta if doc is not None else None) or BookMeta()
    first = tracks[0].path
    title = spec.title or meta.title or (doc.title if doc is not None else "") or first.stem
    series, index = series_parts(spec.series) if spec.series else (meta.series, meta.series_index)
    narrator = spec.narrator or voice_name or "narrate"
    narrators = [n.strip() for n in narrator.split(",") if n.strip()] or ["narrate"]  # "Ann, Bob": a cast's two
    author = spec.author or meta.author
    duration = float(result.get("duration_seconds") or 0.0)
    marks = result.get("chapters") or []
    starts = [float(c["start_seconds"]) for c in marks] + [duration]
    chapters = [(starts[i], starts[i + 1], str(c["title"])) for i, c in enumerate(marks)]
    info = BookInfo(
        title=title,
        authors=[a.strip() for a in author.split(",") if a.strip()],
        narrators=narrators,
        job_id=job_id,
        series=series,
        series_index=index,
        year=spec.year or meta.date[:4],
        publisher=meta.publisher,
        isbn=meta.isbn,
        language=meta.language,
        description=meta.description,
        chapters=chapters,
    )
    stem = PurePosixPath(main[0].relative).stem if main else ""
    readalong = [
        (f.path, f.name[len(stem) :])
        for f in files
        if main and f not in main and f.name.startswith(stem) and f.name[len(stem) :] in READALONG
    ]
    subtitles = [f.path for f in files if f.path.suffix.lower() in (".srt", ".vtt")] if main else []
    subtitles = [p for p in subtitles if p not in {path for path, _ in readalong}]
    cover = store.get_cover(r, spec.cover) if spec.cover else None
    found = read_cover(first) if cover is None and not meta.cover else None
    return (info, [f.path for f in tracks], subtitles, cover or meta.cover or (found[0] if found else None), readalong)


def check_library(library: Path | str) -> Path:
    """The library's folder (raises BadInput unless it is one)."""
    folder = Path(library).expanduser()
    if not folder.is_dir():
        raise BadInput(f"library {library} is not a folder; create it, or name the library's folder")
    return folder


def export_files(
    library: Path,
    layout: str,
    info: BookInfo,
    tracks: list[Path],
    beside: list[Path],
    cover: bytes | None,
    readalong: list[tuple[Path, str]] | None = None,
    replaces: str | None = None,
) -> Exported:
    """The folder of `info`, with `tracks`, `beside`, `cover` and the `readalong` files (each with what follows
    the book's stem in its name), placed in `library`. `replaces`: the job a redo redoes (jobs/api/redo_request.py); its
    folder, if it has one there, is replaced by this one in one rename."""
    library = check_library(library)
    _sweep(library)
    job_id = info.job_id
    target = library / layouts.folder(info, layout)
    found = _existing(target, job_id)
    if found is not None:
        return Exported(found, sorted(p.name for p in found.iterdir()), "already exported")
    prior = _existing(target, replaces) if replaces else None
    tmp = library / f"{HIDDEN}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
        _write(tmp, info, tracks, beside, cover, readalong or [])
        if prior is not None:
            _swap(tmp, prior)  # the old book's folder is at `tmp` now
            shutil.rmtree(tmp, ignore_errors=True)
            return Exported(prior, sorted(p.name for p in prior.iterdir()), f"replaced the export of job {replaces}")
        placed, made = _place(tmp, target, job_id)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise NarrateError(f"cannot export into {library}: {e.strerror or e}") from None
    note = "exported" if placed == target else f"exported as {placed.name} ({target.name} holds another book)"
    note = note if made else "already exported"
    return Exported(placed, sorted(p.name for p in placed.iterdir()), note)


def _swap(new: Path, old: Path) -> None:
    """Exchange two folders: in one step where the system can (Linux renameat2 RENAME_EXCHANGE, macOS
    renamex_np RENAME_SWAP), so a library watcher never sees the book missing; elsewhere the old folder is
    renamed aside first (hidden, removed by the caller or the next export's sweep)."""
    import ctypes
    import sys

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        src, dst = os.fsencode(new), os.fsencode(old)
        if sys.platform.startswith("linux"):
            at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
            done = libc.renameat2(at_cwd, src, at_cwd, dst, exchange) == 0
        elif sys.platform == "darwin":
            done = libc.renamex_np(src, dst, 2) == 0  # RENAME_SWAP
        else:
            done = False
        if done:
            _sync_dir(old.parent)
            return
    aside = new.with_name(f"{new.name}-old")
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)
    _sync_dir(old.parent)


def _existing(target: Path, job_id: str) -> Path | None:
    """The folder this job was exported to before (the target or one of its numbered editions)."""
    for n in range(1, MAX_EDITIONS + 1):
        folder = target if n == 1 else target.with_name(f"{target.name} ({n})")
        if not folder.exists():
            return None
        if _is_of(folder, job_id):
            return folder
    return None


def _write(
    tmp: Path,
    info: BookInfo,
    tracks: list[Path],
    beside: list[Path],
    cover: bytes | None,
    readalong: list[tuple[Path, str]],
) -> None:
    """One book file as "Title.ext"; several tracks (chapter files, parts) under their own names,
    each keeping its title and track number. Every track's tags agree with the folder."""
    stem = layouts.safe_part(info.title, "book")
    if readalong and len(tracks) == 1:
        _write_readalong(tmp, stem, tracks[0], readalong)
    for track in tracks:
        name = f"{stem}{track.suffix.lower()}" if len(tracks) == 1 else layouts.safe_part(track.name, track.name)
        copied = tmp / name
        shutil.copyfile(track, copied)
        tags = Tags(
            title=info.title if len(tracks) == 1 else None,
            album=info.title,
            author=", ".join(info.authors) or None,
            narrator=", ".join(info.narrators),
            year=info.year or None,
            cover=cover,
            series=info.series or None,
            series_part=info.series_index or None,
        )
        write_tags(copied, tags)
    for side in beside:
        shutil.copyfile(side, tmp / f"{stem}{side.suffix.lower()}")
    files = {
        "desc.txt": desc_txt(info).encode(),
        "reader.txt": reader_txt(info).encode(),
        "metadata.opf": opf(info),
        "metadata.json": json.dumps(abs_json(info), indent=2, ensure_ascii=False).encode(),
    }
    if cover:
        files["cover.png" if image_kind(cover) == "png" else "cover.jpg"] = cover
    for name, data in files.items():
        if data:
            (tmp / name).write_bytes(data)
    for path in tmp.iterdir():  # every byte on disk before the folder appears
        with open(path, "rb") as f:
            os.fsync(f.fileno())


def _write_readalong(tmp: Path, stem: str, track: Path, readalong: list[tuple[Path, str]]) -> None:
    """The read-along files as "Title.epub", "Title.audiobook.json", ...; in the manifests and the table of
    contents, each name of the book's files (as a URL: `"book.m4b#t=61.25"`) becomes the folder's."""
    renamed = {track.name: f"{stem}{track.suffix.lower()}"}
    renamed.update({path.name: f"{stem}{what}" for path, what in readalong})
    for path, what in readalong:
        if what not in LINKING:
            shutil.copyfile(path, tmp / f"{stem}{what}")
            continue
        text = path.read_text(encoding="utf-8")
        for old, new in renamed.items():
            text = re.sub(rf'(?<=")({re.escape(quote(old))})(?=["#])', quote(new), text)
        (tmp / f"{stem}{what}").write_text(text, encoding="utf-8")


def _place(tmp: Path, target: Path, job_id: str) -> tuple[Path, bool]:
    """Rename the finished folder to `target`, or to its first free numbered edition: (the folder,
    True); or (the folder, False) if an export of the same job placed it meanwhile (`tmp` removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_EDITIONS + 1):
        folder = target if n == 1 else target.with_name(f"{target.name} ({n})")
        if not folder.exists():
            try:
                os.rename(tmp, folder)  # fails if another export made it meanwhile (a folder with files)
                _sync_dir(folder.parent)
                return folder, True
            except OSError:
                pass
        if _is_of(folder, job_id):  # two exports of one job at once (the worker's and a person's)
            shutil.rmtree(tmp, ignore_errors=True)
            return folder, False
    raise OSError(f"{MAX_EDITIONS} editions of {target.name} exist already")


def _is_of(folder: Path, job_id: str) -> bool:
    with contextlib.suppress(OSError, ValueError, AttributeError, KeyError, TypeError):
        return bool(json.loads((folder / "metadata.json").read_text())["narrate"]["job"] == job_id)
    return False


def _sync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sweep(library: Path) -> None:
    """Remove what killed exports left: hidden folders whose process is gone."""
    for left in library.glob(f"{HIDDEN}*"):
        pid = left.name.removeprefix(HIDDEN).split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
