"""Settings (a pydantic-settings model, jobs/settings.py): each NARRATE_* variable read and checked, a refusal naming
the variable (or the flag) and what it takes, flags over variables over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import Settings, default, env_name, env_value, settings_table


@pytest.fixture(autouse=True)
def no_narrate_variables(monkeypatch):
    import os

    for name in [n for n in os.environ if n.upper().startswith("NARRATE_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("variable", "raw", "said"),
    [
        ("NARRATE_MAX_FRAMES", "lots", "NARRATE_MAX_FRAMES='lots' is not a whole number"),
        ("NARRATE_MAX_FRAMES", "0", "NARRATE_MAX_FRAMES='0' must be at least 1"),
        ("NARRATE_MAX_FRAMES", "70000", "NARRATE_MAX_FRAMES='70000' must be at most 65536"),
        (
            "NARRATE_SERVE_STALL_S",
            "inf",
            "NARRATE_SERVE_STALL_S='inf' must be a finite number of seconds, at least 0.1",
        ),
        ("NARRATE_CACHE_MAX_GB", "-1", "NARRATE_CACHE_MAX_GB='-1' must be a finite number of gigabytes, at least 0"),
        ("NARRATE_ENGINE", "gpu", "NARRATE_ENGINE='gpu': use one of mlx, fake"),
        ("NARRATE_QUANT", "3bit", "NARRATE_QUANT='3bit': choose one of bf16, 4bit, 6bit, 8bit, float32"),
        ("NARRATE_OPENAI_VOICES", "alloy", "NARRATE_OPENAI_VOICES: 'alloy' is not NAME=VOICE"),
        ("NARRATE_PUBLIC_URL", "ftp://h", "NARRATE_PUBLIC_URL='ftp://h': give an http(s) address"),
    ],
)
def test_a_variable_that_cannot_be_used_is_named_with_what_it_takes(monkeypatch, variable, raw, said):
    monkeypatch.setenv(variable, raw)
    with pytest.raises(BadInput) as e:
        Settings.from_env()
    assert str(e.value).startswith(said)


def test_variables_are_read_as_people_write_them(monkeypatch):
    monkeypatch.setenv("NARRATE_SERVE_HOSTS", "a.local, b.local:8000,")  # comma-separated, not JSON
    monkeypatch.setenv("NARRATE_OPENAI_VOICES", "alloy=alice, Onyx=ryan")
    monkeypatch.setenv("NARRATE_HOME", "~/narrate-home")
    monkeypatch.setenv("NARRATE_PUBLIC_URL", "https://narrate.example:8443/")
    monkeypatch.setenv("NARRATE_MODEL_CACHE", "3")
    monkeypatch.setenv("NARRATE_MAX_FRAMES", "")  # empty: unset
    monkeypatch.setenv("NARRATE_SOMETHING_ELSE", "x")  # not a setting (the fake engine's knobs): ignored
    s = Settings.from_env()
    assert s.serve_hosts == ("a.local", "b.local:8000")
    assert s.openai_voices == (("alloy", "alice"), ("onyx", "ryan"))
    assert s.home == Path.home() / "narrate-home"
    assert s.public_url == "https://narrate.example:8443"
    assert s.model_cache == 3
    assert s.max_frames == default("max_frames") == 2048


def test_flags_win_over_variables_and_are_checked_in_their_own_name(monkeypatch, tmp_path):
    monkeypatch.setenv("NARRATE_OUTPUT_DIR", "/somewhere")
    assert Settings.from_env(output_dir=tmp_path).output_dir == tmp_path
    assert Settings.from_env(output_dir=None).output_dir == Path("/somewhere")  # a flag not given
    with pytest.raises(BadInput, match=r"^--max-frames='0' must be at least 1"):
        Settings.from_env(max_frames=0)


def test_one_setting_read_before_the_rest(monkeypatch):
    monkeypatch.setenv("NARRATE_MAX_FRAMES", "lots")  # another setting's mistake does not stop it
    assert env_value("blas") == "auto"
    monkeypatch.setenv("NARRATE_BLAS", "numpy")
    assert env_value("blas") == "numpy"
    monkeypatch.setenv("NARRATE_BLAS", "mkl")
    with pytest.raises(BadInput, match=r"^NARRATE_BLAS='mkl': use one of auto, numpy, bundled"):
        env_value("blas")


def test_settings_are_frozen_and_the_table_has_every_field():
    s = Settings()
    with pytest.raises(ValueError):
        s.seed = 1  # type: ignore[misc]
    rows = settings_table()
    assert [r["env"] for r in rows] == [env_name(n) for n in Settings.model_fields]
    assert all(r["doc"] and r["reads"] in ("client", "worker", "both") for r in rows)
