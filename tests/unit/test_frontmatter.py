"""Markdown front matter is the book's metadata (title, author, language...), not its first
sentence or chapter; a block that is not a mapping stays text."""

from __future__ import annotations

from narrate.jobs.audio.assemble import book_meta
from narrate.jobs.documents.readers import read_any

YAML_BOOK = """---
title: "The Lighthouse: A Tale"
author:
  - Ada Lovelace
  - name: Ann Reader
    email: ann@example.org
lang: fr
date: 2024-05-01
series: Coastal Tales
series_index: 2
description: >
  A keeper and a storm.
---

# Chapter One

Le gardien monta l'escalier. La lampe était froide.

---

Une autre scène commence ici.
"""


def test_yaml_front_matter_is_the_metadata_and_is_not_read(tmp_path):
    path = tmp_path / "lighthouse.md"
    path.write_text(YAML_BOOK)
    doc = read_any(path)
    assert doc.title == "The Lighthouse: A Tale"
    assert doc.sentences[0] == "Chapter One" and not any("title" in s or "Ada" in s for s in doc.sentences)
    assert doc.chapters[0][1] == "Chapter One"  # the front matter is no chapter
    assert doc.sentences[-1] == "Une autre scène commence ici."  # a later --- is a rule, not front matter
    assert doc.language == "fr"
    meta = book_meta(doc)
    assert (meta.title, meta.author, meta.date, meta.series, meta.series_index) == (
        "The Lighthouse: A Tale",
        "Ada Lovelace, Ann Reader",
        "2024-05-01",
        "Coastal Tales",
        "2",
    )
    assert meta.description == "A keeper and a storm."


def test_toml_front_matter_as_hugo_writes_it(tmp_path):
    path = tmp_path / "post.md"
    path.write_text('+++\ntitle = "Night Notes"\nauthors = ["Ann"]\n+++\n\nIt was late. The sea was loud.\n')
    doc = read_any(path)
    assert (doc.title, book_meta(doc).author, doc.sentences) == (
        "Night Notes",
        "Ann",
        ["It was late.", "The sea was loud."],
    )


def test_a_block_that_is_no_mapping_stays_text_and_plain_text_files_keep_theirs(tmp_path):
    rule = tmp_path / "rule.md"
    rule.write_text("---\nJust a line between rules.\n---\n\nThe story starts.\n")
    doc = read_any(rule)
    assert doc.title == "rule" and doc.meta is None
    assert "Just a line between rules." in doc.sentences[0] and doc.sentences[-1] == "The story starts."
    broken = tmp_path / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\n\nThe story starts.\n")
    assert read_any(broken).title == "broken"
    text = tmp_path / "notes.txt"
    text.write_text("---\ntitle: Not Metadata\n---\n\nThe story starts.\n")
    assert read_any(text).title == "notes"  # only Markdown has front matter
