"""The user's configuration file: gate modes under the flag and the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.cli import main
from hive.config import load_config
from hive.errors import SpecError
from hive.judge.modes import gate_modes


def test_a_missing_file_is_an_empty_configuration(tmp_path: Path) -> None:
    assert load_config(tmp_path / "config.toml").gate_modes == {}


def test_configured_gate_modes_sit_under_the_environment_and_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[gate_modes]\npublish = "shadow"\ndeliver = "off"\n')
    config = load_config(path)
    assert gate_modes(None, config=config.gate_modes, environ={}) == {
        "publish": "shadow", "deliver": "off", "relate": "active"}
    assert gate_modes("deliver=active", config=config.gate_modes, environ={"HIVE_GATE_MODE": "publish=off"}) == {
        "publish": "off", "deliver": "active", "relate": "active"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gate_modes\n", "not valid TOML"),
        ('[gate_modes]\npublish = "loud"\n', "gate_modes.publish"),
        ('colour = "red"\n', "colour"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"config file {path}:") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_hive_start_refuses_a_malformed_config_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.toml").write_text('[gate_modes]\npublish = "loud"\n')
    monkeypatch.setenv("HIVE_HOME", str(tmp_path))
    rules = Path(__file__).parent / "data" / "judge" / "rules.json"
    script = tmp_path / "script.json"
    script.write_text('{"bees": {}}')
    runs = tmp_path / "runs"
    args = ["start", "p", "--repo", str(tmp_path), "--model", f"script:{script}", "--judge", f"script:{rules}",
            "--runs-dir", str(runs)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("hive: error: config file") and err.count("\n") == 1
    assert not runs.exists()
