"""The hook through which a cast's voices enter a document. A reader given a `Voicing`
(`ReadOptions.voicing`) hands it the document's paragraphs before they are split into sentences, and
labels every sentence with the voice of the run it came from (`Document.voices`). jobs.cast
implements it (markup, importers, dialogue); this package never imports jobs.cast."""

from __future__ import annotations

from typing import Protocol

NARRATOR = "narrator"  # the label of the narrator's sentences (and the cast name no member may take)

# One voice's stretch of a paragraph: (voice label, text), tags already removed.
Run = tuple[str, str]


class Voicing(Protocol):
    """What a reader asks of a cast, in this order, once per document."""

    def check(self, fmt: str, origin: str) -> None:
        """Refuse (BadInput) a document format this voicing cannot read (fmt: txt, md, epub, html, pdf)."""

    def prepare(self, text: str, origin: str) -> str:
        """A text or Markdown document's whole decoded text, before it is split: an importer rewrites
        another tool's markup into narrate's own here; otherwise the text as it is."""

    def runs(self, paragraphs: list[str], origin: str) -> list[list[Run]]:
        """Each paragraph (its text on one line, in reading order) as runs of one voice each, in
        order, with no tag left in them; one list per paragraph, empty for a paragraph with no text."""
