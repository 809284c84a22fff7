"""Document reading and splitting (sentencex), with the caps that keep odd input away from the model."""

from narrate.jobs.documents import parse_document, split_paragraphs
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
    from narrate.jobs.documents import read_document
    from narrate.jobs.errors import BadInput
    from narrate.jobs.settings import MAX_DOCUMENT_BYTES, MAX_SENTENCES

    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(MAX_DOCUMENT_BYTES + 1)  # sparse: no 20 MiB written
    with pytest.raises(BadInput, match="the limit is 20 MiB"):
        read_document(big)
    many = tmp_path / "many.txt"
    many.write_text("Go. " * (MAX_SENTENCES + 1))
    with pytest.raises(BadInput, match=f"the limit is {MAX_SENTENCES}"):
        read_document(many)


def test_chapters_from_markdown_headings_and_chapter_lines():
    from narrate.jobs.documents import split_document

    text = (
        "# The Book\n\nIntro.\n\n## Chapter One\nIt began. Then more.\n\nCHAPTER IV. The Storm\n\n"
        "Prologue\n\nchapter and verse were quoted at length here. Ok.\n\nPart of me wanted to go.\n\nPart Two: Home"
    )
    paragraphs, chapters = split_document(text)
    assert paragraphs[2:4] == [["Chapter One"], ["It began.", "Then more."]]  # a heading is its own paragraph
    assert chapters == [(0, "The Book"), (2, "Chapter One"), (4, "CHAPTER IV. The Storm"), (5, "Prologue"),
                        (8, "Part Two: Home")]  # fmt: skip
