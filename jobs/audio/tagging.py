"""Tags and cover art written into an encoded file with mutagen (after the encode, before the file
is put in place): MP4 atoms for .m4b/.m4a, ID3v2.3 for .mp3 (ffmpeg misreads the sizes of v2.4
frames nested in chapters, and dropped long chapter titles), Vorbis comments (with a
METADATA_BLOCK_PICTURE) for .flac/.ogg/.opus. WAV carries only the title ffmpeg writes.

Chapter marks go in here too for the formats that take them afterwards: ID3v2 CHAP frames under
one CTOC (the frames ffmpeg's mp3 muxer writes; over 255 chapters, a CTOC of CTOCs, since a table
counts its entries in one byte) and Vorbis CHAPTERnnn/CHAPTERnnnNAME comments
(the convention ffmpeg reads; 999 at most). MP4 chapters are written by ffmpeg's muxer.

Where each field goes (what Apple Books, Audiobookshelf and BookPlayer read): title -> title,
book title -> album, author -> artist and album artist, narrator -> composer (and a "narrator"
field where free-form fields exist), year -> date; a series (library exports) -> MP4 movement
name and number plus SERIES/SERIES-PART free-form fields, ID3 TXXX:SERIES and SERIES-PART, Vorbis
SERIES and SERIES-PART (the names Audiobookshelf reads). `read_cover` reads the cover back."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import TYPE_CHECKING

from narrate.jobs.audio.bookmeta import Tags, image_kind
from narrate.jobs.settings import SAMPLE_RATE

if TYPE_CHECKING:
    from mutagen.id3._util import ID3SaveConfig

Span = tuple[int, int, str]  # (start, end, title) in samples
MAX_VORBIS_CHAPTERS = 999
MAX_CTOC_ENTRIES = 255  # ID3v2 CTOC: a one-byte entry count


def write_tags(path: Path, tags: Tags, chapters: list[Span] | None = None) -> None:
    """Tags (and, for mp3/flac/ogg/opus, `chapters`) into an encoded file."""
    ext = path.suffix.lower()
    if ext in (".m4b", ".m4a"):
        _mp4(path, tags)
    elif ext == ".mp3":
        _id3(path, tags, chapters or [])
    elif ext in (".flac", ".ogg", ".opus"):
        _vorbis(path, tags, chapters or [])


def _ms(samples: int) -> int:
    return samples * 1000 // SAMPLE_RATE


def _mp4(path: Path, tags: Tags) -> None:
    from mutagen.mp4 import MP4, MP4Cover, MP4FreeForm

    f = MP4(path)
    if f.tags is None:
        f.add_tags()
    t = f.tags
    assert t is not None
    for atom, value in (
        ("\xa9nam", tags.title),
        ("\xa9alb", tags.album),
        ("\xa9ART", tags.author),
        ("aART", tags.author),
        ("\xa9wrt", tags.narrator),
        ("\xa9day", tags.year),
    ):
        if value:
            t[atom] = [value]
    if tags.narrator:
        t["----:com.apple.iTunes:NARRATOR"] = [MP4FreeForm(tags.narrator.encode())]
    if tags.track:
        t["trkn"] = [tags.track]
    if tags.series:
        t["\xa9mvn"] = [tags.series]
        t["----:com.apple.iTunes:SERIES"] = [MP4FreeForm(tags.series.encode())]
        if tags.series_part:
            t["----:com.apple.iTunes:SERIES-PART"] = [MP4FreeForm(tags.series_part.encode())]
            if tags.series_part.isdigit():
                t["\xa9mvi"] = [int(tags.series_part)]
    if tags.cover:
        fmt = MP4Cover.FORMAT_PNG if image_kind(tags.cover) == "png" else MP4Cover.FORMAT_JPEG
        t["covr"] = [MP4Cover(tags.cover, imageformat=fmt)]
    f.save()


def _id3(path: Path, tags: Tags, chapters: list[Span]) -> None:
    from mutagen.id3 import (
        APIC,
        CHAP,
        CTOC,
        ID3,
        TALB,
        TCOM,
        TDRC,
        TIT2,
        TPE1,
        TPE2,
        TRCK,
        TXXX,
        CTOCFlags,
        ID3NoHeaderError,
    )

    kind = _chapters_in_order(ID3)
    try:
        t = kind(path)
    except ID3NoHeaderError:
        t = kind()
    frames = [
        (TIT2, tags.title),
        (TALB, tags.album),
        (TPE1, tags.author),
        (TPE2, tags.author),
        (TCOM, tags.narrator),
        (TDRC, tags.year),
    ]
    for frame, value in frames:
        if value:
            t.setall(frame.__name__, [frame(encoding=3, text=[value])])
    for desc, value in (("NARRATOR", tags.narrator), ("SERIES", tags.series), ("SERIES-PART", tags.series_part)):
        if value:
            t.setall(f"TXXX:{desc}", [TXXX(encoding=3, desc=desc, text=[value])])
    if tags.track:
        t.setall("TRCK", [TRCK(encoding=3, text=[f"{tags.track[0]}/{tags.track[1]}"])])
    if tags.cover:
        mime = f"image/{image_kind(tags.cover) or 'jpeg'}"
        t.setall("APIC", [APIC(encoding=3, mime=mime, type=3, desc="Cover", data=tags.cover)])
    if chapters:
        t.delall("CHAP")
        t.delall("CTOC")
        ids = [f"ch{n}" for n in range(len(chapters))]
        ordered = CTOCFlags.ORDERED
        if len(ids) <= MAX_CTOC_ENTRIES:
            t.add(CTOC(element_id="toc", flags=CTOCFlags.TOP_LEVEL | ordered, child_element_ids=ids))
        else:  # a table lists at most 255 elements: a table of tables
            tables = [ids[k : k + MAX_CTOC_ENTRIES] for k in range(0, len(ids), MAX_CTOC_ENTRIES)]
            names = [f"toc{n}" for n in range(1, len(tables) + 1)]
            t.add(CTOC(element_id="toc", flags=CTOCFlags.TOP_LEVEL | ordered, child_element_ids=names))
            for name, table in zip(names, tables, strict=True):
                t.add(CTOC(element_id=name, flags=ordered, child_element_ids=table))
        for eid, (start, end, title) in zip(ids, chapters, strict=True):
            t.add(
                CHAP(
                    element_id=eid,
                    start_time=_ms(start),
                    end_time=_ms(end),
                    sub_frames=[TIT2(encoding=3, text=[title])],
                )
            )
    t.save(path, v2_version=3)  # ffmpeg misreads v2.4 sizes inside CHAP frames: long titles were lost


def _chapters_in_order(id3: type) -> type:
    """mutagen writes a tag's frames smallest first, but ffmpeg (and the audiobook servers that
    read chapters through ffprobe) list CHAP frames in the order they lie in the tag: they are
    written last, by start time. (mutagen is pinned: `_write` and `save_frame` are its own.)"""
    from mutagen.id3._tags import save_frame

    class ChaptersInOrder(id3):
        def _write(self, config: ID3SaveConfig) -> bytes:
            chapters = sorted(self.getall("CHAP"), key=lambda f: f.start_time)
            self.delall("CHAP")
            try:
                head: bytes = super()._write(config)  # mutagen's own is untyped
            finally:
                for frame in chapters:
                    self.add(frame)
            return head + b"".join(save_frame(frame, config=config) for frame in chapters)

    return ChaptersInOrder


def _vorbis(path: Path, tags: Tags, chapters: list[Span]) -> None:
    import mutagen
    from mutagen.flac import Picture

    f = mutagen.File(path)
    if f is None:
        return
    if f.tags is None:
        f.add_tags()
    for key, value in (
        ("title", tags.title),
        ("album", tags.album),
        ("artist", tags.author),
        ("albumartist", tags.author),
        ("composer", tags.narrator),
        ("narrator", tags.narrator),
        ("date", tags.year),
        ("series", tags.series),
        ("series-part", tags.series_part),
    ):
        if value:
            f[key] = [value]
    if tags.track:
        f["tracknumber"] = [str(tags.track[0])]
        f["tracktotal"] = [str(tags.track[1])]
    if tags.cover:
        pic = Picture()
        pic.type, pic.mime, pic.data = 3, f"image/{image_kind(tags.cover) or 'jpeg'}", tags.cover
        if path.suffix.lower() == ".flac":
            f.clear_pictures()
            f.add_picture(pic)
        else:
            f["metadata_block_picture"] = [base64.b64encode(pic.write()).decode("ascii")]
    for n, (start, _, title) in enumerate(chapters[:MAX_VORBIS_CHAPTERS], 1):
        ms = _ms(start)
        f[f"CHAPTER{n:03d}"] = [f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"]
        f[f"CHAPTER{n:03d}NAME"] = [title]
    f.save()


def read_cover(path: Path) -> tuple[bytes, str] | None:
    """The cover art embedded in an audio file (m4b/m4a, mp3, flac) and its media type, or None."""
    try:
        suffix = path.suffix.lower()
        if suffix in (".m4b", ".m4a"):
            from mutagen.mp4 import MP4, MP4Cover

            mp4 = MP4(str(path)).tags
            art: list = mp4.get("covr", []) if mp4 is not None else []
            if art:
                png = art[0].imageformat == MP4Cover.FORMAT_PNG
                return bytes(art[0]), "image/png" if png else "image/jpeg"
        elif suffix == ".mp3":
            from mutagen.id3 import ID3

            pictures = ID3(str(path)).getall("APIC")
            if pictures:
                return bytes(pictures[0].data), str(pictures[0].mime or "image/jpeg")
        elif suffix == ".flac":
            from mutagen.flac import FLAC

            found = FLAC(str(path)).pictures
            if found:
                return bytes(found[0].data), str(found[0].mime or "image/jpeg")
    except Exception:  # noqa: BLE001 - a file mutagen cannot read has no cover to show
        return None
    return None
