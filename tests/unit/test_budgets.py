"""Frame budgets by script: every sentence gets room for a slow reading of it, in any language,
and Latin budgets stay about what the old 25 + 2.1 frames per character gave."""

from __future__ import annotations

from math import ceil

import pytest
from narrate.jobs.book.plan import frame_budget as plan_frame_budget
from narrate.jobs.documents.budgets import FRAMES_PER_SECOND, frame_budget, speaking_seconds
from narrate.jobs.documents.documents import split_paragraphs
from narrate.jobs.settings import MAX_SENTENCE_CHARS

UNCAPPED = 10**9

# (sentence, seconds a slow but normal reader takes to say it). Budgets must cover 1.5x that.
SLOW_READINGS = [
    ("The quick brown fox jumps over the lazy dog.", 44 / 11),  # English: ~11 characters/s when slow
    ("It was the best of times, it was the worst of times, it was the age of wisdom.", 78 / 11),
    ("我们今天在公园里散步，看到了很多美丽的花朵。", 20 / 3.5),  # Chinese: ~3.5 characters/s when slow
    ("今日はとてもいい天気なので、公園へ散歩に行きました。", 25 / 5.0),  # Japanese kana + kanji
    ("오늘은 날씨가 좋아서 공원에 산책하러 갔습니다.", 21 / 5.0),  # Korean: ~5 syllables/s when slow
    ("Сегодня хорошая погода, и мы пошли гулять в парк.", 49 / 11),  # Russian
    ("Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.", 56 / 11),  # Greek
    ("I met Anna in Tokyo, 東京で会いました, and we talked.", 5.5),  # mixed scripts
    ("In 2024, 1,234,567 people paid $45.99 (12% more).", 11.0),  # numbers read out as words
    ("2024年有366天，第1234567号。", 9.0),  # numbers in Chinese
]


@pytest.mark.parametrize("text, slow_seconds", SLOW_READINGS)
def test_each_script_gets_room_for_a_slow_reading(text, slow_seconds):
    budget = frame_budget(text, UNCAPPED)
    assert budget / FRAMES_PER_SECOND >= 1.5 * slow_seconds, (budget, slow_seconds)
    assert budget / FRAMES_PER_SECOND <= 2 + 6 * slow_seconds  # generous, not unbounded


@pytest.mark.parametrize(
    "text",
    [
        "Hi.",
        "The quick brown fox jumps over the lazy dog.",
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
        "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light.",
        "A sentence of plain words and nothing else " * 9,
    ],
)
def test_latin_budgets_stay_about_the_same(text):
    old = 25 + ceil(len(text) * 2.1)
    assert 0.9 * old <= frame_budget(text, UNCAPPED) <= 1.4 * old


def test_a_400_character_chinese_sentence_has_room_for_400_characters_at_4_5_a_second():
    clause = "我们今天在公园里散步看到了很多美丽的花朵和树木"
    text = ("，".join([clause] * 20))[: MAX_SENTENCE_CHARS - 1] + "。"
    assert len(text) == 400
    needed = 400 / 4.5 * FRAMES_PER_SECOND  # 1111 frames
    assert frame_budget(text, UNCAPPED) >= needed
    assert frame_budget(text, 2048) >= needed  # within the default cap
    assert frame_budget("我" * 400, UNCAPPED) >= needed


def test_the_cap_and_the_job_plan_use_the_same_rule():
    text = "我们今天在公园里散步。" * 40
    assert frame_budget(text, 100) == 100 and frame_budget("", 1) == 1
    assert plan_frame_budget is frame_budget


def test_split_cjk_sentences_each_get_their_own_budget():
    text = "，".join(["我们今天在公园里散步看到了很多美丽的花朵和树木"] * 30) + "。"
    parts = split_paragraphs(text)[0]
    assert len(parts) >= 2
    for part in parts:
        assert frame_budget(part, UNCAPPED) / FRAMES_PER_SECOND >= len(part) / 4.5


def test_speaking_time_estimates():
    assert speaking_seconds("") == 0
    assert speaking_seconds("我" * 45) == pytest.approx(10)  # 4.5 characters a second
    assert speaking_seconds("a" * 150) == pytest.approx(10)  # 15 letters a second
    assert speaking_seconds("1234") > speaking_seconds("abcd") * 4  # digits become words
