"""`--proof [MODEL]` and `--retakes N`: request fields (jobs/api/fields.py), checked into Options
(jobs/api/options.py) and the job spec (jobs/book/spec.py), left out of their JSON when unset so that a
request or job made before them keeps its JSON and its job id."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from narrate.cli.common import _option
from narrate.jobs.api.fields import HTTP, FieldError, RequestFields, form_schema
from narrate.jobs.api.options import Options
from narrate.jobs.book.spec import BadSpec, JobSpec, job_timeout

BASE = {"document": "d" * 64, "voice": "a" * 64, "output": "book.m4b"}


def _cli(*args: str) -> tuple[str | None, int | None]:
    seen: dict = {}

    @click.command()
    @click.argument("document", required=False)
    @_option("proof")
    @_option("retakes")
    def cmd(document, proof, retakes):
        seen.update(proof=proof, retakes=retakes, document=document)

    result = CliRunner().invoke(cmd, list(args))
    assert result.exit_code == 0, result.output
    return seen["proof"], seen["retakes"]


def test_proof_alone_means_auto_and_takes_a_model_after_it():
    assert _cli() == (None, None)
    assert _cli("book.txt", "--proof") == ("auto", None)
    assert _cli("--proof", "--retakes", "3") == ("auto", 3)
    assert _cli("--proof", "mlx-community/whisper-large-v3-turbo") == ("mlx-community/whisper-large-v3-turbo", None)


def test_options_check_the_recognizer(tmp_path):
    assert Options.make(proof="auto").proof == "auto" and Options.make(proof="DEFAULT").proof == "auto"
    assert Options.make(proof="org/asr").proof == "org/asr"
    (tmp_path / "asr").mkdir()
    with pytest.raises(FieldError, match=r"--proof.*no config.json"):
        Options.make(proof=str(tmp_path / "asr"))
    (tmp_path / "asr" / "config.json").write_text("{}")
    assert Options.make(proof=str(tmp_path / "asr")).proof == str(tmp_path / "asr")
    with pytest.raises(FieldError, match=r"'book.txt' is neither a local model directory nor a Hugging Face id") as e:
        Options.make(proof="book.txt")  # `--proof book.txt`: the document taken for a model
    assert e.value.param == "proof" and "--proof takes the word after it" in str(e.value)
    with pytest.raises(FieldError, match=r"--retakes '6'"):
        Options.make(retakes=6)


def test_unset_they_leave_the_json_and_the_job_id_as_they_were():
    assert not {"proof", "retakes"} & set(Options.make().to_json())
    kept = Options.from_json(Options.make(proof="auto", retakes=1).to_json())  # a schedule keeps them
    assert (kept.proof, kept.retakes) == ("auto", 1)
    assert not {"proof", "retakes"} & set(JobSpec(**BASE).to_json())
    spec = JobSpec(**BASE, proof="auto", retakes=3)
    assert spec.to_json()["proof"] == "auto" and JobSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("field", "value"), [("proof", "../../etc"), ("proof", "a b"), ("proof", ""), ("retakes", 6), ("retakes", "2")]
)
def test_a_forged_spec_is_refused(field, value):
    with pytest.raises(BadSpec, match=field):
        JobSpec.from_json({**BASE, "proof": "auto", field: value})


def test_the_form_offers_them_and_the_timeout_counts_the_retakes():
    props = form_schema(HTTP)
    assert props["proof"]["type"] == "string" and (props["retakes"]["minimum"], props["retakes"]["maximum"]) == (0, 5)
    assert RequestFields.parse({"proof": "auto", "retakes": 0}, HTTP).retakes == 0
    assert job_timeout([100], 1, 2) - 600 == 2 * (job_timeout([100], 1) - 600)
