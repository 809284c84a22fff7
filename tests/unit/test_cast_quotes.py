"""The quote tokenizer of `--dialogue-voice` (jobs.cast.quotes) as a table of cases in English, German,
French, Spanish, Japanese and Russian: every quote form, dash-opened dialogue, nested quotes,
apostrophes inside and outside dialogue, speech over several paragraphs, unclosed quotes at the end
of a chapter and the ambiguous cases that stay with the narrator."""

from __future__ import annotations

import re

import pytest
from narrate.jobs.cast.quotes import speech_spans, split_speech

Q, N = "Q", "N"  # speech, narration


def pieces(*paragraphs: str) -> list[list[tuple[str, str]]]:
    spans = speech_spans(paragraphs)
    return [split_speech(p, s, Q, N) for p, s in zip(paragraphs, spans, strict=True)]


CASES = [
    # English: straight and curly doubles, the voice changing at the marks, the comma dropped.
    ('"We should leave," she said. "Now."', [(Q, '"We should leave,"'), (N, "she said."), (Q, '"Now."')]),
    ("“I don’t know,” said Tom.", [(Q, "“I don’t know,”"), (N, "said Tom.")]),
    ("She said, “Wait here.”", [(N, "She said,"), (Q, "“Wait here.”")]),
    ("“Hi”, she said.", [(Q, "“Hi”"), (N, "she said.")]),
    # nested quotes are part of the outer one
    ("“She told me, ‘Go home,’ and left,” he said.", [(Q, "“She told me, ‘Go home,’ and left,”"), (N, "he said.")]),
    ("'He said \"no\" twice,' she said.", [(Q, "'He said \"no\" twice,'"), (N, "she said.")]),
    # single quotes, with apostrophes inside the speech
    ("‘It’s the students’ books,’ he said.", [(Q, "‘It’s the students’ books,’"), (N, "he said.")]),
    ("'I don't care about the '90s,' she said.", [(Q, "'I don't care about the '90s,'"), (N, "she said.")]),
    ("‘Rock ’n’ roll!’ he cried.", [(Q, "‘Rock ’n’ roll!’"), (N, "he cried.")]),
    # apostrophes alone are never quotes
    (
        "'Tis the season; don't you think the '90s were fun?",
        [(N, "'Tis the season; don't you think the '90s were fun?")],
    ),
    ("The students' books and the teachers' pens.", [(N, "The students' books and the teachers' pens.")]),
    ("We talked about ’em and the ’80s.", [(N, "We talked about ’em and the ’80s.")]),
    ("'Yes' she said, and left.", [(N, "'Yes' she said, and left.")]),  # no closing punctuation: ambiguous
    # ambiguous: short phrases quoted inside a sentence, a quote with no letter, a stray mark
    ('The so-called "experts" said no.', [(N, 'The so-called "experts" said no.')]),
    ('He read "War and Peace" twice.', [(N, 'He read "War and Peace" twice.')]),
    ('The code was "42" again.', [(N, 'The code was "42" again.')]),
    ("He is 6'2\" tall.", [(N, "He is 6'2\" tall.")]),
    # German: „...“ and „...”, »...«, nested ‚...‘
    ("„Komm her“, sagte er. „Jetzt!“", [(Q, "„Komm her“"), (N, "sagte er."), (Q, "„Jetzt!“")]),
    ("„Er sagte: ‚Komm‘, und ging“, erzählte sie.", [(Q, "„Er sagte: ‚Komm‘, und ging“"), (N, "erzählte sie.")]),
    ("»Komm her«, sagte er.", [(Q, "»Komm her«"), (N, "sagte er.")]),
    ("Sie rief: „Halt!”", [(N, "Sie rief:"), (Q, "„Halt!”")]),
    # French: « ... » with spaces inside, ‹ ... ›, dash dialogue
    ("« Bonjour », dit-il. « Ça va ? »", [(Q, "« Bonjour »"), (N, "dit-il."), (Q, "« Ça va ? »")]),
    ("‹ Oui ›, dit-elle.", [(Q, "‹ Oui ›"), (N, "dit-elle.")]),
    ("— Tu viens ? demanda-t-il.", [(Q, "— Tu viens ? demanda-t-il.")]),
    # Spanish: dash-opened lines, each later dash switching
    ("—Hola —dijo Juan—. ¿Vienes?", [(Q, "—Hola"), (N, "—dijo Juan—"), (Q, "¿Vienes?")]),
    ("— Hola, dijo.", [(Q, "— Hola, dijo.")]),
    ("—¿Qué hora es? —preguntó Ana.", [(Q, "—¿Qué hora es?"), (N, "—preguntó Ana.")]),
    ("«Ya voy», contestó María.", [(Q, "«Ya voy»"), (N, "contestó María.")]),
    # Russian: «...» with „...“ nested, dash dialogue with spaced dashes
    ("«Он сказал: „Иди“, и ушёл», — ответила она.", [(Q, "«Он сказал: „Иди“, и ушёл»"), (N, "— ответила она.")]),
    ("— Привет, — сказал он, — как дела?", [(Q, "— Привет,"), (N, "— сказал он, —"), (Q, "как дела?")]),
    # Japanese: 「...」 after a letter, 『...』 nested
    ("「はい」と彼は言った。", [(Q, "「はい」"), (N, "と彼は言った。")]),
    ("彼女は「『本』を読んで」と言った。", [(N, "彼女は"), (Q, "「『本』を読んで」"), (N, "と言った。")]),
    # a dash line that is an attribution, dashes between numbers
    ("— Mark Twain", [(N, "— Mark Twain")]),
    ("Prices rose 1990–2000, a decade — and more.", [(N, "Prices rose 1990–2000, a decade — and more.")]),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_quote_forms(text, expected):
    assert pieces(text) == [expected]


def test_a_quote_over_several_paragraphs_goes_on_while_each_opens_again():
    got = pieces(
        '"I have a long story to tell.',
        '"It began in the spring.',
        '"And it ended in the fall," he said.',
        "Nobody answered.",
    )
    assert got == [
        [(Q, '"I have a long story to tell.')],
        [(Q, '"It began in the spring.')],
        [(Q, '"And it ended in the fall,"'), (N, "he said.")],
        [(N, "Nobody answered.")],
    ]
    assert pieces("« Il était une fois.", "« Et puis la fin », dit-il.")[0] == [(Q, "« Il était une fois.")]
    assert pieces("„Es war einmal.", "„Und dann“, sagte er.")[0] == [(Q, "„Es war einmal.")]


def test_an_unclosed_quote_at_the_end_of_a_chapter_is_the_narrators():
    got = pieces('He turned. "Wait, I never said', "# Chapter 2", "Morning came.")
    assert got[0] == [(N, 'He turned. "Wait, I never said')]
    assert pieces("«Он не закончил")[0] == [(N, "«Он не закончил")]  # the document's last paragraph
    assert pieces("「まだ終わらない")[0] == [(N, "「まだ終わらない")]
    # a quote closed later in the paragraph is still found after a stray mark
    assert pieces('Size 12" and then "Go," she said.')[0] == [(N, 'Size 12" and then'), (Q, '"Go,"'), (N, "she said.")]


def test_pieces_keep_every_word_and_quote_mark_of_the_paragraph():
    """Only a comma, colon or full stop left at the start of a narration piece is dropped."""
    for text, _ in CASES:
        [runs] = pieces(text)
        joined = " ".join(t for _, t in runs)
        assert re.sub(r"[\s,.:]", "", joined) == re.sub(r"[\s,.:]", "", text), text


def test_a_long_paragraph_of_apostrophes_is_read_in_linear_time():
    import time

    text = "don't 'em students' '90s " * 20_000 + '"Done," he said.'
    began = time.monotonic()
    [runs] = pieces(text)
    assert runs[-2:] == [(Q, '"Done,"'), (N, "he said.")]
    assert time.monotonic() - began < 2.0
