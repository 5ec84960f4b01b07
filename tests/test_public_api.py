"""The public Python API is small, sorted, and every name in it can be imported."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import hive
from hive import errors


def test_all_is_sorted_and_has_no_duplicates() -> None:
    assert hive.__all__ == sorted(hive.__all__)
    assert len(hive.__all__) == len(set(hive.__all__))


@pytest.mark.parametrize("name", hive.__all__)
def test_every_public_name_is_importable(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from hive import {name}", namespace)
    value = namespace[name]
    assert value is getattr(hive, name)
    if name != "__version__":
        assert getattr(value, "__module__", "").startswith("hive."), f"{name} is not hive's own"


def test_everything_public_in_the_package_namespace_is_listed() -> None:
    for name in hive.__all__:  # names load on first use
        getattr(hive, name)
    public = {
        name
        for name, value in vars(hive).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(hive.__all__) - {"__version__"}


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from hive import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(hive.__all__)


def test_version_matches_the_installed_distribution() -> None:
    from importlib.metadata import version

    assert hive.__version__ == version("hive")


def test_the_package_imports_cleanly_in_a_fresh_interpreter() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import hive; print(len(hive.__all__))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(hive.__all__)


def test_the_error_tree_maps_to_the_documented_exit_codes() -> None:
    assert issubclass(hive.UsageError, hive.HiveError) and hive.UsageError.exit_code == 2
    assert issubclass(hive.RunNotFound, hive.UsageError) and hive.RunNotFound.exit_code == 2
    assert issubclass(hive.SpecError, hive.UsageError) and hive.SpecError.exit_code == 2
    assert issubclass(hive.ModelAPIError, hive.RunFailed) and hive.ModelAPIError.exit_code == 1
    assert hive.StoreError.exit_code == 1
    assert hive.Interrupted.exit_code == 130
    assert errors.HiveError is hive.HiveError
