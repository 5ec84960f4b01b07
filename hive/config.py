"""The user's configuration file: ``$HIVE_HOME/config.toml``, by default ``~/.config/hive/config.toml``.

It holds defaults that are a person's rather than a run's, for now the gate modes::

    [gate_modes]
    publish = "shadow"
    deliver = "off"

Command-line flags and environment variables override it. A missing file is an empty configuration; an
unreadable or malformed one is a one-line :class:`~hive.errors.SpecError` naming the file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from hive.errors import SpecError
from hive.records import GateMode

CONFIG_FILE = "config.toml"


def hive_home() -> Path:
    """``$HIVE_HOME``, else ``~/.config/hive``: where the user's roles and configuration live."""
    home = os.environ.get("HIVE_HOME")
    return Path(home) if home else Path.home() / ".config" / "hive"


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gate_modes: dict[str, GateMode] = {}
    """gate → mode, under the flag and ``HIVE_GATE_MODE``."""


def load_config(path: Path | None = None) -> Config:
    """The configuration in ``path`` (default: :func:`hive_home` / ``config.toml``)."""
    path = path or hive_home() / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"config file {path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    try:
        return Config.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"config file {path}: not valid TOML ({e})") from None
    except ValidationError as e:
        problem = e.errors()[0]
        place = ".".join(str(part) for part in problem["loc"])
        raise SpecError(f"config file {path}: {place}: {problem['msg']}") from None
