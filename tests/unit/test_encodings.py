"""Document encodings: UTF-8/16/32 with a byte-order mark are read; other text is refused with
the iconv command that converts it; binary is refused."""

from __future__ import annotations

import codecs

import pytest
from narrate.jobs.documents.documents import parse_document
from narrate.jobs.errors import BadInput

TEXT = "Café crème, naïve. 你好，世界。\n\nПривет! 🙂 Done."
EXPECTED = [["Café crème, naïve.", "你好，世界。"], ["Привет!", "🙂 Done."]]


@pytest.mark.parametrize(
    "bom, codec",
    [
        (codecs.BOM_UTF16_LE, "utf-16-le"),  # Windows Notepad's "Unicode"
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
        (b"", "utf-8"),
    ],
)
def test_unicode_with_a_byte_order_mark_is_read(bom, codec):
    raw = bom + TEXT.replace("\n", "\r\n").encode(codec)
    assert parse_document(raw, "t").paragraphs == EXPECTED


@pytest.mark.parametrize(
    "text, codec, named",
    [
        ("Café crème et naïveté. Ça va?", "latin-1", "LATIN1"),
        ("It’s “quoted” — café.", "cp1252", "WINDOWS-1252"),
        ("Привет, как дела? Всё хорошо, спасибо.", "cp1251", "WINDOWS-1251"),
        ("Привет, как дела? Всё хорошо, спасибо.", "koi8_r", "KOI8-R"),
        ("Ελληνικά κείμενα εδώ, καλημέρα σας.", "cp1253", "WINDOWS-1253"),
        ("שלום עולם, מה שלומך היום?", "cp1255", "WINDOWS-1255"),
        ("مرحبا بالعالم، كيف حالك اليوم؟", "cp1256", "WINDOWS-1256"),
        ("สวัสดีครับ ยินดีต้อนรับ ทุกคน", "cp874", "TIS-620"),
        ("こんにちは。今日はいい天気ですね。", "shift_jis", "SHIFT_JIS"),
        ("こんにちは。今日はいい天気ですね。", "euc_jp", "EUC-JP"),
        ("我们的是中国人，这是一个很好的问题。", "gbk", "GBK"),
        ("我們的是中國人，這是一個很好的問題。", "big5", "BIG5"),
        ("안녕하세요. 오늘 날씨가 좋네요.", "euc_kr", "EUC-KR"),
        ("Plain words here.\nこんにちは。", "utf-16-le", "UTF-16LE"),  # UTF-16 without its mark
        ("Plain words here.", "utf-16-be", "UTF-16BE"),
    ],
)
def test_other_encodings_are_refused_with_the_command_that_converts_them(text, codec, named):
    with pytest.raises(BadInput) as e:
        parse_document(text.encode(codec), "t", origin="my book.txt")
    message = str(e.value)
    assert f"`iconv -f {named} -t UTF-8 'my book.txt' > 'my book.txt.utf8.txt'`" in message, message
    assert "\n" not in message


def test_unknown_legacy_text_still_gets_a_conversion_hint():
    raw = "Źdźbło, żółć i gęś: zażółć gęślą jaźń.".encode("cp1250")  # not guessed, but the way out is given
    with pytest.raises(BadInput, match=r"not UTF-8 text \(bad byte 0x8F at offset 0\); .*iconv -f ENCODING"):
        parse_document(raw, "t")


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)), "NUL bytes: it looks binary"),
        (codecs.BOM_UTF16_LE + "a\x00b".encode("utf-16-le"), "NUL characters: it looks binary"),
        (codecs.BOM_UTF16_LE + b"\x00\xd8", "is not valid UTF-16LE"),  # a lone surrogate
    ],
)
def test_binary_is_refused(raw, message):
    with pytest.raises(BadInput, match=message):
        parse_document(raw, "t")


def test_utf8_with_a_few_stray_bytes_says_where_and_how_to_drop_them():
    raw = ("Café crème, naïve résumé. " * 20 + "日本語。\n").encode() + b"Caf\xe9 au lait. " + "Über. ".encode()
    with pytest.raises(BadInput) as e:
        parse_document(raw, "t", origin="book.txt")
    message = str(e.value)
    assert "is UTF-8 but for 1 invalid byte(s) (the first is a bad byte 0xE9 at offset" in message, message
    assert "line 2)" in message and "`iconv -f UTF-8 -t UTF-8 -c book.txt > book.txt.utf8.txt`" in message
