"""One spelling of each model id: the README's and the docs' ids are the code's defaults
(jobs/settings.py DEFAULT_MODEL, jobs/voices/model_offer.py), and the messages that suggest a model
(worker/engine/row_voices.py) name those same ids."""

from __future__ import annotations

import re
from pathlib import Path

from narrate.jobs.settings import DEFAULT_MODEL
from narrate.jobs.voices.model_offer import DEFAULT_CUSTOM_VOICE, DEFAULT_VOICE_DESIGN

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = {DEFAULT_MODEL, DEFAULT_CUSTOM_VOICE, DEFAULT_VOICE_DESIGN}
QWEN_ID = re.compile(r"(?:Qwen|mlx-community)/Qwen3-TTS-12Hz-[\w.-]+")


def test_the_readme_names_the_codes_default_model():
    readme = (ROOT / "README.md").read_text()
    said = re.search(r"The default model, `([^`]+)`", readme)
    assert said is not None and said.group(1) == DEFAULT_MODEL


def test_every_model_id_in_the_readme_and_docs_is_a_default_of_the_code():
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {(p.name, m) for p in texts for m in QWEN_ID.findall(p.read_text())}
    assert found, "the README names its default model"
    assert {(name, m) for name, m in found if m not in DEFAULTS} == set()


def test_a_suggested_model_is_spelled_as_the_readme_spells_it():
    from narrate.worker.engine.row_voices import suggest

    assert {suggest("/a/local/checkpoint", kind) for kind in ("base", "custom_voice", "voice_design")} == DEFAULTS


def test_the_readme_says_before_its_first_command_that_it_downloads_the_model():
    readme = (ROOT / "README.md").read_text()
    setup = readme[readme.index("## Set up on a fresh machine") : readme.index("## Contents")]
    before_first = setup[: setup.index("```sh")]
    assert "needs the network" in before_first and DEFAULT_MODEL in before_first and "GB" in before_first
    assert "random-weight" in before_first  # the offline path, named right there
    everyday = readme[readme.index("## Everyday commands") :]
    for command in ("`narrate worker", "`narrate serve"):
        item = everyday[everyday.index(f"- {command}") :].split("\n- ")[0]
        assert "NARRATE_MODEL" in item, item
    assert "is read by `narrate serve` as well as by the worker" in (ROOT / "docs" / "settings.md").read_text()
    assert "Start `serve` and the workers with the same `NARRATE_MODEL`" in (ROOT / "docs" / "serve.md").read_text()
