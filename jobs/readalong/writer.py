"""What a job writes for `--readalong` (jobs/task/stitcher.py calls `add`): beside `book.m4b`,
`book.audiobook.json` (manifest.py), `book.publication.json` with `book.toc.html` (manifest.py: W3C
Audiobooks) and `book.epub` (epub.py), put in place with the book by its
BookWriter under the same ownership rules. The EPUB holds the book's own file when it is an mp3,
m4a or m4b (the core audio types of EPUB 3), else an AAC copy encoded from it once the book is
encoded. Word timings (a recognizer's, per sentence: timing.Word) make its overlays word by word;
without them they are sentence by sentence."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import NAMESPACE_URL, uuid5

from narrate.jobs.audio.bookmeta import Tags
from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book.plan import Plan
from narrate.jobs.documents.documents import Document
from narrate.jobs.ffmpeg import run_ffmpeg
from narrate.jobs.outputs.outputs import FORMATS
from narrate.jobs.readalong import manifest
from narrate.jobs.readalong.overlay_epub import Narration, write_epub
from narrate.jobs.readalong.package import BookInfo
from narrate.jobs.readalong.timing import Word, clips_of

if TYPE_CHECKING:
    from narrate.jobs.audio.book_writer import BookWriter

log = logging.getLogger("narrate.jobs")
EPUB_AUDIO = (".mp3", ".m4a", ".m4b")


def identifier(job_id: str) -> str:
    """The book's identifier in its EPUB and manifest: a UUID of the job's id (the same book, the same id)."""
    return f"urn:uuid:{uuid5(NAMESPACE_URL, f'narrate:{job_id}')}"


def add(
    book: BookWriter,
    formats: str,
    job_id: str,
    doc: Document,
    plan: Plan,
    cues: Sequence[Cue],
    spans: Sequence[tuple[int, int, str]],
    rate: int,
    ffmpeg: str,
    words: Mapping[int, Sequence[Word]] | None = None,
) -> None:
    """Give `book` the read-along files `formats` ("epub,manifest,w3c") asks for. `cues`: every
    sentence's times (with chapters), `spans`: the chapters (BookWriter.chapter_spans)."""
    tags = book.tags or Tags()
    title = tags.title or doc.title
    stem, now = book.final.stem, datetime.now(UTC).replace(microsecond=0)
    asked = formats.split(",")
    chapters = [(start / rate, t) for start, _, t in spans]
    if "manifest" in asked:
        name = f"{stem}.audiobook.json"
        made = manifest.audiobook(
            name,
            book.final.name,
            book.samples / rate,
            chapters,
            identifier=identifier(job_id),
            title=title,
            language=doc.language,
            modified=now,
            author=tags.author,
            narrator=tags.narrator,
        )
        book.add_text(name, manifest.render(made))
    if "w3c" in asked:
        name, toc = f"{stem}.publication.json", f"{stem}.toc.html"
        made = manifest.w3c(
            toc,
            book.final.name,
            book.samples / rate,
            identifier=identifier(job_id),
            title=title,
            language=doc.language,
            modified=now,
            author=tags.author,
            narrator=tags.narrator,
        )
        book.add_text(name, manifest.render(made))
        book.add_text(toc, manifest.toc_html(title, doc.language, book.final.name, chapters, name))
    if "epub" in asked:
        clips = {c.index: c for c in clips_of(cues, rate)}
        narration = Narration(plan.originals, clips, dict(plan.chapter_at), words or None)
        info = BookInfo(identifier(job_id), title, doc.language, now, tags.author, tags.narrator, tags.cover)

        def make(audio: Path | None, scratch: Path) -> Path:
            if audio is None:
                raise ValueError("a read-along EPUB needs the whole book's file (not with --split chapters)")
            if audio.suffix.lower() not in EPUB_AUDIO:  # flac, ogg, opus, wav: an AAC copy
                copy = scratch / "readalong-audio.m4a"
                muxer, codec = FORMATS[".m4a"]
                run_ffmpeg(ffmpeg, ["-y", "-i", str(audio), "-map", "0:a:0", *codec, "-f", muxer, str(copy)])
                audio = copy
            out = scratch / "readalong.partial.epub"
            written = write_epub(out, doc, narration, info, audio)
            if written.marked < written.sentences:
                log.warning(
                    "read-along EPUB: %d of %d sentences found in its pages (the others have no overlay)",
                    written.marked,
                    written.sentences,
                )
            return out

        book.add_made(f"{stem}.epub", make)
