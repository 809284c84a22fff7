"""Each chapter's sentences done, as the worker saves them: counted from the checkpoints found at
the start, then once per sentence synthesized (a sentence synthesized again counts once)."""

from __future__ import annotations

from narrate.jobs.documents.selection import spans
from narrate.jobs.task.progress import Progress


class FakeJob:
    meta: dict = {}


def test_chapters_count_their_own_sentences_once():
    chapters = spans([(2, "One"), (5, "Two")], 8, "Book")
    assert chapters == [(0, 2, "Book"), (2, 5, "One"), (5, 8, "Two")]
    job = FakeJob()
    job.meta = {}
    progress = Progress(job, 8, done=2, save=lambda _job: None, chapters=chapters, done_indices={0, 6})
    for index in (1, 2, 6, 7, 7):  # 6 was checkpointed; 7 is synthesized again
        progress.sentence_done(0.5, index)
    progress.save()
    shown = job.meta["progress"]["chapters"]
    assert [(c["title"], c["done"], c["total"]) for c in shown] == [("Book", 2, 2), ("One", 1, 3), ("Two", 2, 3)]
