"""A job's plan: the document's sentences in reading order with their seeds and frame budgets,
where paragraphs end and chapters start, and the checkpoint key of every sentence."""

from __future__ import annotations

import zlib
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate

from narrate.jobs.book.checkpoints import CheckpointStore, checkpoint_key
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.budgets import frame_budget
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.languages import tts_name
from narrate.jobs.documents.normalize import Normalizer
from narrate.jobs.documents.voicing import NARRATOR


def sentence_seed(job_seed: int, text: str) -> int:
    """A sentence's sampling seed: a function of the text, so re-renders reproduce it."""
    return (job_seed * 1_000_003 + zlib.crc32(text.encode())) % (2**31)


@dataclass(frozen=True)
class Plan:
    sentences: list[Sentence]  # what is spoken: the normalized text (jobs.documents.normalize)
    paragraph_end: frozenset[int]  # indices of the last sentence of each paragraph
    chapter_at: dict[int, str]  # index of a chapter's first sentence -> its title
    keys: list[str]  # checkpoint key of each sentence
    originals: list[str]  # each sentence as the document writes it (subtitles, manifests)

    def checkpointed(self, checkpoints: CheckpointStore) -> dict[int, int]:
        """Sentence -> samples, of the sentences with a complete, intact checkpoint (body checksum
        verified); the others are what this attempt has to synthesize."""
        found = {s.index: checkpoints.samples(self.keys[s.index]) for s in self.sentences}
        return {i: n for i, n in found.items() if n is not None}

    @cached_property
    def _paragraph_ends(self) -> list[int]:
        return sorted(self.paragraph_end)

    def paragraph_of(self, index: int) -> int:
        """The number of the paragraph sentence `index` is in (0 first): how many paragraphs end before it."""
        return bisect_left(self._paragraph_ends, index)

    def speaker(self, index: int) -> str | None:
        """The cast's label of the sentence's voice, for subtitles (None in a book of one voice)."""
        if all(s.voice == NARRATOR for s in self.sentences):
            return None
        return self.sentences[index].voice

    def pause_after_ms(self, index: int, spec: JobSpec) -> int:
        if index == len(self.sentences) - 1:
            return 0
        if index + 1 in self.chapter_at:
            return spec.chapter_pause_ms
        pause = spec.paragraph_pause_ms if index in self.paragraph_end else spec.sentence_pause_ms
        if self.sentences[index].voice != self.sentences[index + 1].voice:  # another speaker takes over
            pause = max(pause, spec.speaker_pause_ms)
        return pause


def spoken_paragraphs(doc: Document, lexicon: list[list[str]] | None = None) -> list[list[str]]:
    """The document's paragraphs as they are spoken: the lexicon, then normalization in the
    paragraph's language (the document's, or a marked passage's); a chapter's heading paragraph
    is normalized as a heading."""
    normalizers: dict[str, Normalizer] = {}
    headings = {p for p, _ in doc.chapters}
    spoken = []
    for p, para in enumerate(doc.paragraphs):
        code = doc.language_of(p)
        normalize = normalizers.setdefault(code, Normalizer(code, lexicon))
        spoken.append([normalize(s, heading=p in headings) for s in para])
    return spoken


def make_plan(doc: Document, spec: JobSpec, model_key: str, quant: str) -> Plan:
    """Sentences, seeds, budgets and checkpoint keys all come from the spoken (normalized) text,
    so a changed lexicon entry or rule re-renders exactly the sentences whose spoken text changed.
    A redo's overrides (``JobSpec.overrides``) change only their sentences: a corrected text (also
    what subtitles show), lexicon entries of its own, or another job seed for its sentence seed."""
    sentences: list[Sentence] = []
    paragraph_end: set[int] = set()
    refs = spec.voice_refs()
    labels = doc.sentence_voices
    overrides = spec.sentence_overrides()
    if overrides and max(overrides) >= len(doc.sentences):
        raise BadSpec(f"job spec: override of sentence {max(overrides)}, beyond the document's {len(doc.sentences)}")
    originals = list(doc.sentences)
    headings = {p for p, _ in doc.chapters}
    for p, para in enumerate(spoken_paragraphs(doc, spec.lexicon)):
        language = tts_name(doc.language_of(p))
        for text in para:
            i = len(sentences)
            label, over = labels[i], overrides.get(i, {})
            if label not in refs:
                raise BadSpec(f"sentence {i} is read by {label!r}, a voice the job's cast does not have")
            if "text" in over or "lexicon" in over:  # a redo's corrected text or pronunciation
                originals[i] = over.get("text", originals[i])
                lexicon = [*spec.lexicon, *over.get("lexicon", [])]  # its entries win
                text = Normalizer(doc.language_of(p), lexicon)(originals[i], heading=p in headings)
            seed = sentence_seed(over.get("seed", spec.seed_of(label)), text)
            sentences.append(Sentence(i, text, seed, frame_budget(text, spec.max_frames), language, label))
        paragraph_end.add(len(sentences) - 1)
    first_of_paragraph = [0, *accumulate(len(p) for p in doc.paragraphs)]
    chapter_at = {first_of_paragraph[p]: title for p, title in doc.chapters}
    identity = {label: ref.identity for label, ref in refs.items()}  # a sample's sha256, or a speaker and instruction
    keys = [checkpoint_key(_keyed_text(s), identity[s.voice], model_key, quant, s.seed, s.budget) for s in sentences]
    return Plan(sentences, frozenset(paragraph_end), chapter_at, keys, originals)


def _keyed_text(s: Sentence) -> str:
    """What a checkpoint's audio depends on besides the settings: the spoken text and, unless it
    is "auto" (keys of earlier versions stay valid), the language the model was told."""
    return s.text if s.language == "auto" else f"{s.language}\n{s.text}"
