"""An EPUB 3 with media overlays: the book's text with each sentence (and, given word timings, each
word) tied to its clip of the book's audio, which the package holds.

From an EPUB read for it (Document.source): the files its package document lists, cleaned of
anything that runs or loads from elsewhere (documents.readers.epub_clean), with the pages its reader read
marked (pages.mark), one SMIL document a page, the audio, a stylesheet for the active class and,
where it had none (an EPUB 2), a navigation document; the package document says version 3.0.
From any other document: a package of narrate's own, one page a chapter (pages.document_pages).
The mimetype comes first and stored, as the OCF container asks."""

from __future__ import annotations

import logging
import posixpath
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree
from narrate.jobs.audio.bookmeta import image_kind
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.readers.epub_clean import clean_source, container
from narrate.jobs.readalong.package import STYLE, BookInfo, Package, nav_document, new_package
from narrate.jobs.readalong.smil import overlay, relative
from narrate.jobs.readalong.timing import Clip, Word, placed
from narrate.jobs.readalong.xhtml_pages import Page, document_pages, mark, mark_words, parse_xhtml

AUDIO_TYPES = {".mp3": "audio/mpeg", ".m4a": "audio/mp4"}  # EPUB 3's core audio types
_XML = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, load_dtd=False)
log = logging.getLogger("narrate.jobs")


@dataclass(frozen=True)
class Narration:
    sentences: Sequence[str]  # every sentence as the document writes it (Plan.originals)
    clips: dict[int, Clip]  # sentence index -> its clip of the book's audio
    chapter_at: dict[int, str]  # a chapter's first sentence -> its title
    words: Mapping[int, Sequence[Word]] | None = None  # sentence index -> its words' times (timing.Word)

    def placed_words(self) -> dict[int, list[Word]]:
        return {i: placed(self.clips[i], ws) for i, ws in (self.words or {}).items() if i in self.clips and ws}

    def word_texts(self) -> dict[int, list[str]] | None:
        return {i: [w[0] for w in ws] for i, ws in self.words.items()} if self.words else None


@dataclass(frozen=True)
class Written:
    sentences: int  # in the book
    marked: int  # found in its pages and tied to their audio


def write_epub(out: Path, doc: Document, narration: Narration, info: BookInfo, audio: Path) -> Written:
    """The EPUB at `out`; `audio`: the book's audio, an mp3 or AAC in MP4 (.m4a, .m4b)."""
    ext = ".m4a" if audio.suffix.lower() in (".m4a", ".m4b") else audio.suffix.lower()
    kind = AUDIO_TYPES[ext]
    if doc.source:
        files, audio_path, marked = _from_source(doc, narration, info, ext, kind)
    else:
        files, audio_path, marked = _from_document(doc, narration, info, ext, kind)
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), b"application/epub+zip")  # stored, first
        for name, data in files.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
        z.write(audio, audio_path, compress_type=zipfile.ZIP_STORED)  # audio does not deflate
    return Written(len(narration.sentences), marked)


def _folder(files: dict[str, bytes], base: str) -> str:
    """A folder of narrate's own in the package, beside the package document."""
    name, n = "narrate", 1
    while any(f.startswith(posixpath.join(base, name) + "/") for f in files):
        n += 1
        name = f"narrate-{n}"
    return posixpath.join(base, name)


def _from_source(
    doc: Document, narration: Narration, info: BookInfo, ext: str, kind: str
) -> tuple[dict[str, bytes], str, int]:
    source = clean_source(doc.source)  # what the package lists, nothing that runs or loads from elsewhere
    if source.dropped:
        log.info("read-along EPUB: left out of the source EPUB: %s", "; ".join(source.dropped[:20]))
    files, opf_path = source.files, source.opf_path
    pkg = Package(etree.fromstring(files[opf_path], _XML), posixpath.dirname(opf_path))
    pages = []
    for name in doc.source_pages:
        path = posixpath.normpath(posixpath.join(pkg.base, name))
        try:
            pages.append(Page(path, parse_xhtml(files[path], path)))
        except (KeyError, ValueError) as e:
            log.warning("read-along EPUB: page %s left as it is (%s)", path, e)
    marked = mark(pages, narration.sentences, narration.word_texts())
    folder = _folder(files, pkg.base)
    audio_path, css_path = f"{folder}/audio{ext}", f"{folder}/readalong.css"
    pkg.make_epub3(info.modified)
    pkg.add_item(audio_path, kind, "narrate-audio")
    pkg.add_item(css_path, "text/css", "narrate-style")
    files[css_path] = STYLE.encode()
    durations: dict[str, float] = {}
    words = narration.placed_words()
    for n, page in enumerate(pages, 1):
        item = pkg.item_of(page.path)
        if not page.marked or item is None:
            continue
        smil_path = f"{folder}/overlays/{n:03d}.smil"
        page.link_style(relative(css_path, page.path))
        body, seconds = overlay(page, smil_path, audio_path, narration.clips, words)
        ident = pkg.add_item(smil_path, "application/smil+xml", f"narrate-overlay-{n}")
        item.set("media-overlay", ident)
        files[page.path], files[smil_path], durations[ident] = page.xhtml(), body, seconds
    if not pkg.has_nav():
        nav_path = f"{folder}/nav.xhtml"
        entries = [(title, relative(target, nav_path)) for title, target in _chapters(pages, narration)]
        files[nav_path] = nav_document(info.title, info.language, entries)
        pkg.add_item(nav_path, "application/xhtml+xml", "narrate-nav", "nav")
    pkg.overlays(durations, info.narrator)
    files[opf_path] = pkg.xml()
    return files, audio_path, marked


def _chapters(pages: Sequence[Page], narration: Narration) -> list[tuple[str, str]]:
    """(title, path#id) of each chapter whose first sentence (or a later one of it) is marked."""
    where = {i: f"{p.path}#{ident}" for p in pages for i, ident in p.marked.items()}
    starts = sorted(narration.chapter_at)
    out = []
    for k, first in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(narration.sentences)
        target = next((where[i] for i in range(first, end) if i in where), None)
        if target is not None:
            out.append((narration.chapter_at[first], target))
    return out


def _from_document(
    doc: Document, narration: Narration, info: BookInfo, ext: str, kind: str
) -> tuple[dict[str, bytes], str, int]:
    base = "OEBPS"
    pages = document_pages(doc, f"{base}/text")
    texts = narration.word_texts()
    if texts:
        mark_words(pages, texts)
    pkg = Package(new_package(info), base)
    pkg.meta("dcterms:modified", info.modified.strftime("%Y-%m-%dT%H:%M:%SZ"))
    audio_path, css_path, nav_path = f"{base}/audio/book{ext}", f"{base}/css/readalong.css", f"{base}/nav.xhtml"
    files: dict[str, bytes] = {"META-INF/container.xml": container(f"{base}/content.opf")}
    pkg.add_item(nav_path, "application/xhtml+xml", "nav", "nav")
    entries = [(p.title or "", relative(p.path, nav_path)) for p in pages]
    files[nav_path] = nav_document(info.title, info.language, entries)
    pkg.add_item(css_path, "text/css", "style")
    files[css_path] = STYLE.encode()
    pkg.add_item(audio_path, kind, "audio")
    cover = info.cover if info.cover and image_kind(info.cover) else None
    if cover:
        cover_path = f"{base}/images/cover.{'png' if image_kind(cover) == 'png' else 'jpg'}"
        pkg.add_item(cover_path, f"image/{image_kind(cover)}", "cover-image", "cover-image")
        files[cover_path] = cover
    durations: dict[str, float] = {}
    words = narration.placed_words()
    for n, page in enumerate(pages, 1):
        smil_path = f"{base}/overlays/ch{n:03d}.smil"
        page.link_style(relative(css_path, page.path))
        body, seconds = overlay(page, smil_path, audio_path, narration.clips, words)
        smil_id = pkg.add_item(smil_path, "application/smil+xml", f"overlay-{n}")
        pkg.spine_add(pkg.add_item(page.path, "application/xhtml+xml", f"ch{n}", overlay=smil_id))
        files[page.path], files[smil_path], durations[smil_id] = page.xhtml(), body, seconds
    pkg.overlays(durations, info.narrator)
    files[f"{base}/content.opf"] = pkg.xml()
    return files, audio_path, sum(len(p.marked) for p in pages)
