"""Text as narrate writes it into XML (the podcast feed's RSS, a library's OPF) and into ffmpeg's
metadata file: every character XML 1.0 does not allow goes (C0 controls but tab and line breaks,
lone surrogates, U+FFFE, U+FFFF), as do the C1 controls and the bidirectional embeddings, overrides,
isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F) that make a title read otherwise
than it is written. A strict XML reader (a podcast app) refuses a whole document over one such
character. `without_bidi` takes out the bidi controls alone: the pages of `narrate serve` and the
names its downloads are saved under show no text that reads otherwise than it is written."""

from __future__ import annotations

import html.entities
import re

# The bidi controls, as a regex class's inside: marks, embeddings, overrides, isolates.
BIDI_CONTROLS = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")
# Kept: tab, LF, CR, printable ASCII, U+00A0-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF (XML 1.0's Char
# without DEL and the C1 controls); then the bidi controls are taken out of what is left.
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}
_NOT_XML = re.compile(f"[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[{BIDI_CONTROLS}]")


def xml_text(text: str) -> str:
    """`text` with the characters XML 1.0 refuses (and the bidi controls) removed."""
    return _NOT_XML.sub("", text)


def without_bidi(text: str) -> str:
    """`text` with the bidi controls (BIDI_CONTROLS) removed, every other character kept."""
    return _BIDI.sub("", text)


def named_entity(m: re.Match[str]) -> str:
    """An HTML named entity XML does not know, as a character reference (others as they are)."""
    name = m.group(1)
    if name in _XML_ENTITIES or name not in html.entities.name2codepoint:
        return m.group(0)
    return f"&#{html.entities.name2codepoint[name]};"
