"""Where each sentence of a book lies in its (X)HTML pages, and an id'd span around it.

The pages' text is walked as a reader walks it (jobs/documents/readers/xhtml.py: scripts, styles,
images and footnotes left out), every visible character folded (no spaces, marks or format
characters; compatibility forms and case folded) into one string per page with each character's
place in the tree. A sentence, folded alike, is found in it from where the sentence before it
ended (a sentence not found, e.g. one a cast's markup changed, is left unmarked).

Wrapping a sentence in a span changes no text: the span holds exactly the nodes of the sentence.
Where a sentence starts or ends inside an inline element that holds more than it (`<em>Stop. Go.</em>`),
that element is split in two at the sentence's edge (`<em>Stop. </em><span><em>Go.</em></span>`),
the second part without the id; an element the sentence starts or ends at is left whole. Sentences
are wrapped from the last to the first, so where one lies stays true while the later ones are
wrapped; a sentence's words are wrapped inside its span the same way."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from lxml import etree
from narrate.jobs.documents.readers.xhtml import DROP_TAGS, NOTE_ROLES, NOTE_TYPES

XML_ID = "{http://www.w3.org/XML/1998/namespace}id"
_MARK = "narrate-mark"  # a temporary element, removed before the page is written
_MARKER = re.compile(r"^[\s\[\(]*([0-9]{1,3}|[ivxlc]{1,6}|[a-z]|[*†‡§¶#]+)[\]\)\s]*$", re.IGNORECASE)


def _is_note(el: etree._Element, tag: str) -> bool:
    """A footnote marker or a note's body, as the readers leave them out (jobs/documents/readers/xhtml.py
    `_is_note`, for a tree of any namespace)."""
    kinds = set(" ".join(v for k, v in el.attrib.items() if k in ("type", "role") or k.endswith("}type")).split())
    if kinds & NOTE_TYPES or kinds & NOTE_ROLES:
        return True
    text = "".join(el.itertext())
    if tag == "sup":
        return bool(_MARKER.match(text)) or any(local_name(a) == "a" for a in el.iterdescendants())
    if tag == "a" and el.getparent() is not None and (el.get("href") or "").startswith("#"):
        return bool(_MARKER.match(text)) and text.strip() != ""
    return False


@lru_cache(maxsize=4096)
def fold(ch: str) -> str:
    """What a character counts as when text is compared: nothing for spaces, controls, format
    characters and combining marks; else its compatibility decomposition, case folded."""
    if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Mn", "Me"):
        return ""
    return "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)).casefold()


def folded(text: str) -> str:
    return "".join(fold(ch) for ch in text)


@dataclass(frozen=True)
class Piece:
    """A run of text in the tree: `owner`'s text, or its tail."""

    owner: etree._Element
    tail: bool

    @property
    def text(self) -> str:
        return (self.owner.tail if self.tail else self.owner.text) or ""


@dataclass
class Stream:
    """The visible text under an element: `key` (folded) and, for each of its characters, the
    piece and offset it comes from."""

    pieces: list[Piece] = field(default_factory=list)
    key: str = ""
    where: list[tuple[int, int]] = field(default_factory=list)

    def place(self, first: int, last: int) -> tuple[tuple[Piece, int], tuple[Piece, int]]:
        """The tree positions of key characters first..last (inclusive): (piece, offset) of the first
        character, and (piece, offset just after) the last one."""
        p0, o0 = self.where[first]
        p1, o1 = self.where[last]
        return (self.pieces[p0], o0), (self.pieces[p1], o1 + 1)


def local_name(el: etree._Element) -> str:
    tag = el.tag
    return etree.QName(tag).localname.lower() if isinstance(tag, str) else ""


def stream_of(top: etree._Element) -> Stream:
    """The visible text under `top` (itself included, its tail not)."""
    out = Stream()
    chars: list[str] = []

    def add(owner: etree._Element, tail: bool) -> None:
        text = owner.tail if tail else owner.text
        if not text:
            return
        n = len(out.pieces)
        out.pieces.append(Piece(owner, tail))
        for offset, ch in enumerate(text):
            for c in fold(ch):
                chars.append(c)
                out.where.append((n, offset))

    todo: list[tuple[bool, etree._Element]] = [(False, top)]
    while todo:
        tail, el = todo.pop()
        if tail:
            add(el, True)
            continue
        tag = local_name(el)
        if not tag or tag in DROP_TAGS or _is_note(el, tag):
            continue  # a comment's text, a script, a footnote...: its tail is read all the same
        add(el, False)
        for child in reversed(el):
            todo.append((True, child))
            todo.append((False, child))
    out.key = "".join(chars)
    return out


@dataclass(frozen=True)
class Found:
    page: int  # index into the streams searched
    first: int  # key characters first..last of that page's stream
    last: int


def find_all(keys: Sequence[str], texts: Sequence[str]) -> list[Found | None]:
    """Each text found in the folded texts `keys` (Stream.key of each page) in order, each after the
    one before it (None: not found; the search goes on from the last one found)."""
    out: list[Found | None] = []
    page, pos = 0, 0
    for text in texts:
        key = folded(text)
        hit = None
        if key:
            for p in range(page, len(keys)):
                at = keys[p].find(key, pos if p == page else 0)
                if at >= 0:
                    hit = Found(p, at, at + len(key) - 1)
                    break
        out.append(hit)
        if hit is not None:
            page, pos = hit.page, hit.last + 1
    return out


def _mark(piece: Piece, offset: int) -> etree._Element:
    """A marker element put into the tree at `offset` of the piece's text."""
    m = etree.Element(_MARK)
    text = piece.text
    head, rest = text[:offset] or None, text[offset:] or None
    m.tail = rest
    if piece.tail:
        piece.owner.tail = head
        piece.owner.addnext(m)
    else:
        piece.owner.text = head
        piece.owner.insert(0, m)
    return m


def _clone(el: etree._Element) -> etree._Element:
    """An empty element like `el`, without its id (the first part keeps it)."""
    twin = etree.Element(el.tag, nsmap=el.nsmap)
    for k, v in el.attrib.items():
        if k not in ("id", XML_ID):
            twin.set(k, v)
    return twin


def _split_after(parent: etree._Element, m: etree._Element) -> None:
    """Split `parent` at marker `m` (its child): what follows m goes into a copy of parent after
    it, and m goes between the two."""
    twin = _clone(parent)
    twin.text, m.tail = m.tail, None
    for sib in list(m.itersiblings()):
        twin.append(sib)  # with its tail
    twin.tail, parent.tail = parent.tail, None
    parent.addnext(twin)
    parent.addnext(m)
    if not twin.text and len(twin) == 0:  # nothing followed m
        m.tail, twin.tail = twin.tail, None
        twin.getparent().remove(twin)


def _lift_start(m: etree._Element, top: etree._Element) -> None:
    while (parent := m.getparent()) is not top:
        if m.getprevious() is None and not (parent.text or "").strip():  # at the element's start: before it
            parent.text = ((parent.text or "") + (m.tail or "")) or None
            m.tail = None
            parent.addprevious(m)
        else:
            _split_after(parent, m)


def _lift_end(m: etree._Element, top: etree._Element) -> None:
    while (parent := m.getparent()) is not top:
        if m.getnext() is None and not (m.tail or "").strip():  # at the element's end: after it
            space, m.tail = m.tail, None
            before = m.getprevious()
            if space and before is not None:
                before.tail = (before.tail or "") + space
            elif space:
                parent.text = (parent.text or "") + space
            m.tail, parent.tail = parent.tail, None
            parent.addnext(m)
        else:
            _split_after(parent, m)


def _common(a: etree._Element, b: etree._Element) -> etree._Element:
    ancestors = list(a.iterancestors())
    for el in b.iterancestors():
        if any(el is x for x in ancestors):
            return el
    raise ValueError("the two places are in different trees")


def wrap(start: tuple[Piece, int], end: tuple[Piece, int], ident: str) -> etree._Element:
    """Wrap the text from `start` to `end` (tree positions, as Stream.place gives) in a span with
    id `ident`; returns the span."""
    e = _mark(*end)  # the end first: marking the start changes the piece the end may be in
    s = _mark(*start)
    top = _common(s, e)
    _lift_start(s, top)
    _lift_end(e, top)
    tag = etree.QName(top.tag)
    span = etree.Element(f"{{{tag.namespace}}}span" if tag.namespace else "span", nsmap=top.nsmap)
    span.set("id", ident)
    span.text, s.tail = s.tail, None
    for sib in list(s.itersiblings()):
        if sib is e:
            break
        span.append(sib)
    span.tail, e.tail = e.tail, None
    s.addnext(span)
    top.remove(s)
    top.remove(e)
    return span


def ids_in(root: etree._Element) -> set[str]:
    return {v for el in root.iter() if isinstance(el.tag, str) for k, v in el.attrib.items() if k in ("id", XML_ID)}


def new_id(wanted: str, taken: set[str]) -> str:
    """`wanted`, or wanted-2, -3... when the page has it already."""
    ident, n = wanted, 1
    while ident in taken:
        n += 1
        ident = f"{wanted}-{n}"
    taken.add(ident)
    return ident


def mark_words(span: etree._Element, words: Sequence[str], prefix: str, taken: set[str]) -> list[str | None]:
    """Wrap each word (in order) found in the sentence's span in a span of its own; returns each
    word's id (None: not found in the text)."""
    stream = stream_of(span)
    hits = find_all([stream.key], words)
    ids: list[str | None] = [None] * len(words)
    for j in reversed(range(len(words))):
        hit = hits[j]
        if hit is not None:
            ident = new_id(f"{prefix}-w{j + 1}", taken)
            wrap(*stream.place(hit.first, hit.last), ident)
            ids[j] = ident
    return ids
