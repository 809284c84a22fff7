"""Document reading and splitting (sentencex), with the caps that keep odd input away from the model."""

from narrate.jobs.documents.documents import parse_document, split_paragraphs
from narrate.jobs.settings import MAX_SENTENCE_CHARS


def test_paragraphs_and_sentences():
    text = "Dr. Smith went home. He said hi!\nThen he slept.\n\n\n# A Heading\n\n  Last one?  "
    assert split_paragraphs(text) == [
        ["Dr. Smith went home.", "He said hi!", "Then he slept."],
        ["A Heading"],
        ["Last one?"],
    ]


def test_windows_newlines_bom_and_invisible_characters():
    raw = "\ufeffOne.\r\n\r\nTw\u200bo\u202e.".encode("utf-8-sig")
    assert parse_document(raw, "t").paragraphs == [["One."], ["Two."]]


def test_overlong_sentence_is_split_never_sent_whole():
    words = " ".join(["word"] * 5000)  # 25k characters without a full stop
    sentences = split_paragraphs(words)[0]
    assert len(sentences) > 10 and all(len(s) <= MAX_SENTENCE_CHARS for s in sentences)
    assert " ".join(sentences) == words
    blob = "x" * 2000  # no spaces at all: hard cuts
    assert [len(s) for s in split_paragraphs(blob)[0]] == [400] * 5


def test_rtl_and_non_latin_text_is_kept():
    assert split_paragraphs("שלום עולם. مرحبا بالعالم.")[0][0].startswith("שלום")


def test_document_caps(tmp_path):
    import pytest
    from narrate.jobs.documents.documents import read_document
    from narrate.jobs.errors import BadInput
    from narrate.jobs.settings import MAX_DOCUMENT_BYTES, MAX_SENTENCES

    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: no 20 MiB written
    with pytest.raises(BadInput, match="the limit is 20 MiB"):
        read_document(big)
    many = tmp_path / "many.txt"
    many.write_text("Go. " * (MAX_SENTENCES + 1))
    with pytest.raises(BadInput, match=f"more than {MAX_SENTENCES} sentences"):
        read_document(many)


def test_chapters_from_markdown_headings_and_chapter_lines():
    from narrate.jobs.documents.documents import split_document

    text = (
        "# The Book\n\nIntro.\n\n## Chapter One\nIt began. Then more.\n\nCHAPTER IV. The Storm\n\n"
        "Prologue\n\nchapter and verse were quoted at length here. Ok.\n\nPart of me wanted to go.\n\nPart Two: Home"
    )
    paragraphs, chapters = split_document(text)
    assert paragraphs[2:4] == [["Chapter One"], ["It began.", "Then more."]]  # a heading is its own paragraph
    assert chapters == [
        (0, "The Book"),
        (2, "Chapter One"),
        (4, "CHAPTER IV. The Storm"),
        (5, "Prologue"),
        (8, "Part Two: Home"),
    ]


def test_what_cannot_be_spoken_is_removed():
    from narrate.jobs.documents.documents import split_document

    text = (
        "Hello\x1b[1;31m world\x1b[0m\x07. Tab\there, form\x0cfeed\x7f.\n\n"  # terminal colours, controls
        "Tag\U000e0041\U000e0042 chars\u2061 and a soft\u00adhyphen.\u2029"  # invisible format characters
        "Next paragraph\u2028same one."  # Unicode paragraph and line separators
    )
    assert split_document(text)[0] == [
        ["Hello world.", "Tab here, form feed."],
        ["Tag chars and a softhyphen."],
        ["Next paragraph same one."],
    ]


def test_a_document_of_only_invisible_or_control_characters_has_no_text(tmp_path):
    import pytest
    from narrate.jobs.documents.documents import parse_document
    from narrate.jobs.errors import BadInput

    for text in ("\u200b\u200d\u2060\ufeff\u202e\U000e0041", "\x01\x02\x1b[0m\x7f\x85", "\u0301" * 50):
        with pytest.raises(BadInput, match="no text to narrate"):
            parse_document(text.encode(), "t")


def test_floods_of_combining_marks_are_trimmed():
    zalgo = "Z" + "\u0301\u0316\u0335" * 100 + "algo is here."
    (sentence,) = split_paragraphs(zalgo)[0]
    assert len(sentence) == len("Ź") + 8 + len("algo is here.") and sentence.endswith("algo is here.")
    assert split_paragraphs("Tiếng Việt, हिन्दी, בְּרֵאשִׁית.")[0] == ["Tiếng Việt, हिन्दी, בְּרֵאשִׁית."]  # real marks stay


def test_long_cjk_sentences_are_split_at_their_punctuation():
    clause = "我们今天在公园里散步看到了很多美丽的花朵和树木" * 2  # 46 characters, no spaces
    text = "，".join([clause] * 20) + "。"  # one 941-character sentence
    parts = split_paragraphs(text)[0]
    assert len(parts) > 2 and all(len(p) <= MAX_SENTENCE_CHARS for p in parts)
    assert all(p.endswith("，") for p in parts[:-1]) and "".join(parts) == text
    japanese = "、".join(["今日はとてもいい天気なので散歩に行きました"] * 30) + "。"
    parts = split_paragraphs(japanese)[0]
    assert all(p.endswith("、") for p in parts[:-1]) and "".join(parts) == japanese
    unbroken = "我" * 1000  # no punctuation at all: cut anywhere
    assert [len(p) for p in split_paragraphs(unbroken)[0]] == [400, 400, 200]


def test_a_hard_cut_never_separates_a_letter_from_its_marks():
    import unicodedata

    text = "x" + "कि" * 600  # Devanagari without spaces: a cut at 400 would orphan a vowel sign
    parts = split_paragraphs(text)[0]
    assert "".join(parts) == text and all(len(p) <= MAX_SENTENCE_CHARS for p in parts)
    assert not any(unicodedata.category(p[0]).startswith("M") for p in parts), [p[:2] for p in parts]


def test_splitting_a_long_line_takes_linear_time():
    import time

    from narrate.jobs.documents.documents import _cap_length

    line = "word " * 1_600_000  # 8 MB without a full stop: 20,000 parts
    started = time.perf_counter()
    parts = _cap_length(line)
    elapsed = time.perf_counter() - started
    assert len(parts) == 20_000 and elapsed < 1.5, elapsed  # copying the rest for each part took ~3 s


def test_splitting_stops_once_a_document_has_too_many_sentences(monkeypatch):
    """A few MiB of one-word paragraphs are millions of sentences: refuse them without splitting all."""
    import pytest
    import sentencex
    from narrate.jobs.documents import documents
    from narrate.jobs.errors import BadInput

    calls = []
    real_segment = sentencex.segment
    monkeypatch.setattr(sentencex, "segment", lambda lang, text: calls.append(1) or real_segment(lang, text))
    monkeypatch.setattr(documents, "MAX_SENTENCES", 100)
    with pytest.raises(BadInput, match="more than 100 sentences"):
        documents.parse_document(b"Word.\n\n" * 10_000, "t")
    assert len(calls) <= 102
