"""`Settings`: built once from a command line, frozen, stored and read back by a resumed batch, and
the one place the `--call-seconds` cap meets a manifest's own deadline."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import PROJECT

from graders.harness.batch.dispatcher import batch_parser
from graders.harness.cli import grade_parser
from graders.harness.core.settings import Settings

EX = PROJECT.exercise_ids()[0]


def test_from_args_takes_what_the_command_line_gives():
    args = grade_parser().parse_args(["--seed", "5", "--lang", "zh", "--exercise", EX])
    settings = Settings.from_args(args, PROJECT)
    assert settings == Settings(seed=5, lang="zh", exercises=[EX], call_seconds=None, run_hidden=True)


def test_from_args_fills_in_a_random_seed_and_the_locales_language(monkeypatch):
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    args = grade_parser().parse_args([])
    seeds = {Settings.from_args(args, PROJECT).seed for _ in range(5)}
    assert len(seeds) > 1 and all(0 <= s < 2**31 for s in seeds)
    assert Settings.from_args(args, PROJECT).lang == "zh"
    assert Settings.from_args(args, PROJECT).exercises is None


def test_a_batchs_call_cap_comes_from_its_command_line():
    args = batch_parser().parse_args(["subs", "--out", "res", "--seed", "1", "--call-seconds", "2.5"])
    assert Settings.from_args(args, PROJECT).call_seconds == 2.5


def test_settings_are_frozen_and_round_trip_through_a_batchs_stored_form():
    settings = Settings(seed=9, lang="en", exercises=[EX], call_seconds=1.0, run_hidden=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 1  # type: ignore[misc]
    stored = settings.as_dict()
    assert list(stored) == ["seed", "lang", "exercises", "call_seconds", "run_hidden"]  # batch.json's keys
    assert Settings.from_dict(stored) == settings
    assert Settings.from_dict({**stored, "unknown": 1}) == settings
    assert settings.but(seed=3) == Settings(
        seed=3, lang="en", exercises=[EX], call_seconds=1.0, run_hidden=False
    )


def test_the_call_cap_only_ever_shortens_a_manifests_deadline():
    manifest = PROJECT.load_manifest(EX)
    own = manifest.call_seconds
    assert Settings().call_deadline(manifest) == own
    assert Settings(call_seconds=own / 2).call_deadline(manifest) == own / 2
    assert Settings(call_seconds=own * 2).call_deadline(manifest) == own
