"""Text normalization (table tests), lexicons, languages, and the plan's spoken text and keys."""

from __future__ import annotations

import pytest
from narrate.jobs.book.plan import make_plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.documents.documents import Document, parse_document, split_document
from narrate.jobs.documents.languages import check_language, detect_language, resolve_language
from narrate.jobs.documents.lexicon import parse_lexicon, read_lexicon
from narrate.jobs.documents.normalize import normalize
from narrate.jobs.errors import BadInput

ENGLISH = [
    (
        "Dr. Smith paid $3.50 on 12 May 1999 at 10:30.",
        "Doctor Smith paid three dollars fifty on the twelfth of May nineteen ninety-nine at ten thirty.",
    ),
    # numbers: plain, negative, decimal, large, with separators
    ("He has 3 cats.", "He has three cats."),
    ("It was -5 outside.", "It was minus five outside."),
    ("Pi is 3.14.", "Pi is three point one four."),
    (
        "They counted 1,234,567 stars.",
        "They counted one million two hundred and thirty-four thousand five hundred and sixty-seven stars.",
    ),
    ("A 1000000 times.", "A one million times."),
    ("Version 3.5.1 shipped.", "Version three point five point one shipped."),
    ("Read pages 10-20.", "Read pages ten to twenty."),
    # ordinals
    ("She came 1st, he came 2nd.", "She came first, he came second."),
    ("The 21st and 103rd floors.", "The twenty-first and one hundred and third floors."),
    # years and decades
    ("In 1999 it rained.", "In nineteen ninety-nine it rained."),
    ("By 2005 it stopped.", "By two thousand five it stopped."),
    ("Built in 1905.", "Built in nineteen oh five."),
    ("The 1990s were loud.", "The nineteen nineties were loud."),
    ("From 1914-1918 they fought.", "From nineteen fourteen to nineteen eighteen they fought."),
    # dates
    ("Born May 12, 1999.", "Born May twelfth, nineteen ninety-nine."),
    ("Due 1999-05-12.", "Due the twelfth of May nineteen ninety-nine."),
    ("On 3rd June we left.", "On the third of June we left."),
    # times
    ("Meet at 7 pm.", "Meet at seven PM."),
    ("Meet at 7:05 a.m. sharp.", "Meet at seven oh five AM sharp."),
    ("Lunch is at 12:00.", "Lunch is at twelve o'clock."),
    # currency
    ("It costs €10.", "It costs ten euros."),
    ("They raised £2.5m.", "They raised two point five million pounds."),
    ("Only $0.99 each.", "Only ninety-nine cents each."),
    ("Just $1 and $3,000.", "Just one dollar and three thousand dollars."),
    # percentages
    ("Turnout was 45%.", "Turnout was forty-five percent."),
    ("Prices fell -3.5%.", "Prices fell minus three point five percent."),
    # abbreviations
    ("Mr. and Mrs. Jones met Prof. Lee.", "Mister and Missus Jones met Professor Lee."),
    ("We met at St. Paul's on Baker St.", "We met at Saint Paul's on Baker Street."),
    ("Cats vs. dogs, e.g. pets, i.e. friends, etc.", "Cats versus dogs, for example pets, that is friends, et cetera."),
    ("See No. 5.", "See number five."),
    # Roman numerals after a heading word, not the pronoun
    ("Chapter IV", "Chapter Four"),
    ("In World War II I was there.", "In World War Two I was there."),
    ("I think I can.", "I think I can."),
    # URLs and e-mail addresses
    ("Visit https://www.example.com/docs today.", "Visit w w w dot example dot com slash docs today."),
    ("See example.org.", "See example dot org."),
    ("Mail john.doe@example.com now.", "Mail john dot doe at example dot com now."),
    # phone-like digit strings, digit by digit
    ("Call 555-123-4567.", "Call five five five, one two three, four five six seven."),
    ("Call +44 20 7946 0958.", "Call plus four four, two zero, seven nine four six, zero nine five eight."),
    ("Agent 007 reporting.", "Agent zero zero seven reporting."),
    # symbols
    ("Tom & Jerry.", "Tom and Jerry."),
    ("So 2 + 2 = 4.", "So two plus two equals four."),
    ("It was 20°C.", "It was twenty degrees Celsius."),
    ("Item #5 is out.", "Item number five is out."),
]


@pytest.mark.parametrize(("text", "spoken"), ENGLISH)
def test_english(text, spoken):
    assert normalize(text, "en") == spoken


def test_roman_numeral_heading_only_in_headings():
    assert normalize("IV. The Storm", "en", heading=True) == "Four. The Storm"
    assert normalize("I", "en", heading=True) == "One"
    assert normalize("I. went home.", "en") == "I. went home."  # not a heading: left alone


@pytest.mark.parametrize(
    ("language", "text", "spoken"),
    [
        ("de", "Er kaufte 3 Äpfel für 2,5 Euro.", "Er kaufte drei Äpfel für zwei Komma fünf Euro."),
        ("fr", "Il a 21 ans.", "Il a vingt et un ans."),
        ("zh", "我有3个苹果。", "我有3个苹果。"),  # num2words does not speak Chinese: left alone
    ],
)
def test_other_languages(language, text, spoken):
    assert normalize(text, language) == spoken


ORDINALS = [
    ("fr", "Le 1er mai, elle arriva 2e.", "Le premier mai, elle arriva deuxième."),
    (
        "fr",
        "La 1re fois, au XIXe siècle, sous la Ve République.",
        "La première fois, au dix-neuvième siècle, sous la cinquième République.",
    ),
    ("fr", "Ce matin, De Gaulle et Le Monde.", "Ce matin, De Gaulle et Le Monde."),  # words, not Roman numerals
    ("fr", "Il habite au 3ème étage.", "Il habite au troisième étage."),
    (
        "es",
        "Es la 2ª vez en el 1.er piso del 21º edificio.",
        "Es la segunda vez en el primer piso del vigésimo primero edificio.",
    ),
    ("es", "Llegó 3º.", "Llegó tercero."),
    ("it", "Il 1° maggio è la 3ª volta.", "Il primo maggio è la terza volta."),
    ("pt", "A 21ª edição do 2º ano.", "A vigésima primeira edição do segundo ano."),
    ("de", "Am 3. Mai 1999 kam er.", "Am dritten Mai neunzehnhundertneunundneunzig kam er."),
    ("de", "Heute ist der 1. April.", "Heute ist der erste April."),
    (
        "de",
        "Im Jahr 2024 und 1848 kostete es 2,5 Euro.",
        "Im Jahr zweitausendvierundzwanzig und achtzehnhundertachtundvierzig kostete es zwei Komma fünf Euro.",
    ),
    ("de", "Er kam um 3. Dann ging er.", "Er kam um drei. Dann ging er."),  # a bare "3." ends a sentence
    ("ru", "Это 1-й раз, 2-я попытка, до 5-го мая.", "Это первый раз, вторая попытка, до пятого мая."),
    ("ru", "В 21-м веке.", "В двадцать первом веке."),
]


@pytest.mark.parametrize(("language", "text", "spoken"), ORDINALS)
def test_ordinals_in_other_languages(language, text, spoken):
    assert normalize(text, language) == spoken


def test_lexicon_first_whole_word_case_sensitive():
    lex = parse_lexicon("# names\nNguyen = Win\nSQL\tsequel\nNew York = the Big Apple  # a phrase\n")
    assert lex == [["Nguyen", "Win"], ["SQL", "sequel"], ["New York", "the Big Apple"]]
    assert normalize("Mr. Nguyen knows SQL in New York.", "en", lex) == "Mister Win knows sequel in the Big Apple."
    assert normalize("nguyen and Nguyens and MySQL stay.", "en", lex) == "nguyen and Nguyens and MySQL stay."
    # the lexicon goes before the rules: its spoken form may use them
    assert normalize("R2 beeps.", "en", parse_lexicon("R2 = Artoo 2")) == "Artoo two beeps."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Nguyen = Win\nbroken line\n", "line 2: expected 'word = spoken form'"),
        ("\n\n = Win\n", "line 3: both the word and its spoken form are needed"),
        ("Nguyen =\n", "line 1: both the word"),
        ("!! = bang\n", "line 1: the word '!!' has no letters or digits"),
        ("x = " + "y" * 300, "line 1: an entry may have at most 200 characters"),
    ],
)
def test_lexicon_errors_name_the_line(text, message):
    with pytest.raises(BadInput, match=message):
        parse_lexicon(text, "lexicon words.txt")


def test_lexicon_file_must_be_utf8(tmp_path):
    p = tmp_path / "lex.txt"
    p.write_bytes(b"caf\xe9 = kafay\n")
    with pytest.raises(BadInput, match="not UTF-8"):
        read_lexicon(p)
    with pytest.raises(BadInput, match="does not exist"):
        read_lexicon(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("The quick brown fox jumps over the lazy dog. It was a bright cold day in April.", "en"),
        ("Der schnelle braune Fuchs springt über den faulen Hund. Es war ein heller, kalter Tag.", "de"),
        ("我们明天早上去公园散步，然后一起吃午饭。天气很好。", "zh"),
        ("私たちは明日の朝、公園を散歩して、それから一緒に昼ご飯を食べます。", "ja"),
        ("12345 67890 !!!", "en"),  # nothing to go on: English
        ("Dit is een Nederlandse zin over het weer en de fiets van mijn buurman.", "en"),  # not spoken: English
    ],
)
def test_detect_language(text, code):
    assert detect_language(text) == code


def test_language_names_and_errors():
    assert check_language("German") == "de"
    assert check_language("pt_BR") == "pt"
    assert check_language("zh-CN") == "zh"
    assert check_language(None) == "auto"
    with pytest.raises(BadInput, match=r"unknown language 'klingon': use auto or one of zh \(Chinese\), en"):
        check_language("klingon")
    assert resolve_language("auto", "Der Hund schläft im Garten und die Katze auch.", metadata="fr") == "fr"
    assert resolve_language("en", "Der Hund schläft im Garten und die Katze auch.") == "en"


def test_abbreviations_do_not_split_sentences():
    paragraphs, _ = split_document("Dr. Smith met Mr. Jones at St. Paul's, e.g. at noon. They left.")
    assert paragraphs == [["Dr. Smith met Mr. Jones at St. Paul's, e.g. at noon.", "They left."]]


def test_document_language_is_detected_and_used_for_splitting():
    doc = parse_document("Der Hund schläft. Am 3. Mai kam er heim.".encode(), "t")
    assert doc.language == "de"
    assert doc.sentences == ["Der Hund schläft.", "Am 3. Mai kam er heim."]  # "3." is no sentence end in German
    assert Document.from_json(doc.to_json()) == doc


def test_plan_speaks_normalized_text_and_keeps_the_original():
    doc = Document("t", [["Chapter IV"], ["Dr. Smith paid $3.", "Nguyen left."]], [(0, "Chapter IV")], "en")
    spec = JobSpec(document="d", voice="a" * 64, output="o.wav", lexicon=[["Nguyen", "Win"]])
    plan = make_plan(doc, spec, "m", "bf16")
    assert [s.text for s in plan.sentences] == ["Chapter Four", "Doctor Smith paid three dollars.", "Win left."]
    assert plan.originals == ["Chapter IV", "Dr. Smith paid $3.", "Nguyen left."]
    assert {s.language for s in plan.sentences} == {"english"}
    changed = make_plan(
        doc, JobSpec(document="d", voice="a" * 64, output="o.wav", lexicon=[["Nguyen", "Nwen"]]), "m", "bf16"
    )
    assert [a == b for a, b in zip(plan.keys, changed.keys, strict=True)] == [True, True, False]


def test_marked_passages_keep_their_language_through_json_and_into_the_plan():
    doc = Document("t", [["Hello there."], ["Le 1er mai."]], [], "en", languages=["en", "fr"])
    assert Document.from_json(doc.to_json()) == doc
    assert "languages" not in Document("t", [["Hi."]], [], "en").to_json()  # one language: JSON as before
    plan = make_plan(doc, JobSpec(document="d", voice="a" * 64, output="o.wav"), "m", "bf16")
    assert [(s.language, s.text) for s in plan.sentences] == [
        ("english", "Hello there."),
        ("french", "Le premier mai."),
    ]


def test_spec_json_without_lexicon_is_unchanged():
    assert "lexicon" not in JobSpec(document="d", voice="a" * 64, output="o.wav").to_json()
    spec = JobSpec(document="d", voice="a" * 64, output="o.wav", lexicon=[["a", "b"]])
    assert JobSpec.from_json(spec.to_json()) == spec
