"""Submitting many documents at once (``narrate submit a.txt b.md c.txt``): one job each, all
checked before any is stored or enqueued. With several documents ``-o`` is a directory and each
output is named after its document (``--format`` picks the extension, mp3 by default); with one
document ``-o`` is the file (or an existing directory to put it in)."""

from __future__ import annotations

import os
from pathlib import Path

from narrate.jobs.api import submit as api
from narrate.jobs.api.casting import CastChoice
from narrate.jobs.api.options import DEFAULTS, Options
from narrate.jobs.errors import BadInput
from narrate.jobs.outputs.outputs import OUTPUTS, check_format
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice

DEFAULT_FORMAT = ".mp3"


def output_paths(documents: list[Path], output: str | Path | None, fmt: str | None, root: Path) -> list[Path]:
    """Where each document's audio goes (a relative `output`, and the default, are taken from the
    output root `root`: the one output rule); refuses two documents that would write the same file."""
    root = Path(root).expanduser()
    ext = check_format(f"x.{fmt.lower().lstrip('.')}") if fmt else None
    if not documents:
        raise BadInput("no document given: narrate submit DOCUMENT... --voice VOICE")
    if output is None:
        directory = root
    else:
        out = Path(output).expanduser()
        out = out if out.is_absolute() else root / out
        is_dir = os.path.isdir(out) or str(output).endswith(("/", os.sep))  # False for a name too long
        if len(documents) == 1 and not is_dir:
            if ext and out.suffix.lower() != ext:
                raise BadInput(f"-o {output} and --format {fmt} disagree; give one of them, or make them match")
            return [out]
        if not is_dir and (os.path.lexists(out) or out.suffix.lower() in OUTPUTS):
            raise BadInput(
                f"with {len(documents)} documents -o is a directory (each output is named after its document), "
                f"but {output} is {'a file' if out.exists() else 'a file name'}; give a directory"
            )
        directory = out
    paths = [directory / f"{Path(d).stem}{ext or DEFAULT_FORMAT}" for d in documents]
    _refuse_collisions(documents, paths)
    return paths


def _refuse_collisions(documents: list[Path], paths: list[Path]) -> None:
    """Two documents, one output file: refused, also when only the case differs (macOS and Windows
    file systems ignore case, so A.mp3 and a.mp3 are one file there)."""
    seen: dict[str, Path] = {}
    for doc, path in zip(documents, paths, strict=True):
        k = os.path.abspath(path).casefold()
        if k in seen:
            first = seen[k]
            if os.path.abspath(first) == os.path.abspath(doc):
                raise BadInput(f"document {doc} is given twice; give each document once")
            raise BadInput(
                f"documents {first} and {doc} would both be written to {path}; rename one, or submit them separately"
            )
        seen[k] = doc


def prepare_batch(
    settings: Settings,
    documents: list[Path],
    voice: Path | VoiceChoice,
    output: str | Path | None = None,
    fmt: str | None = None,
    options: Options = DEFAULTS,
    cast: CastChoice | None = None,
) -> list[api.Request]:
    """Check every document, output and the voice or cast (raises BadInput naming the first bad one)."""
    paths = [Path(d) for d in documents]
    outputs = output_paths(paths, output, fmt, settings.output_dir)
    return api.prepare_many(settings, paths, voice, outputs, options, cast)
