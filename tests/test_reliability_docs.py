"""docs/reliability.md lists real tests, and lists every test of the reliability suite."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
REFERENCE = re.compile(r"(tests/[\w/]+\.py)?::(\w+)")


def listed_tests() -> set[tuple[str, str]]:
    """(file, test) for every `file::test` in the tables; `::test` alone continues the file named before it."""
    found: set[tuple[str, str]] = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `tests/"):
            continue
        first_cell = line.split("|")[1]
        current = None
        for path, name in REFERENCE.findall(first_cell):
            current = path or current
            assert current is not None, line
            found.add((current, name))
    return found


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")}


def test_every_listed_test_exists() -> None:
    listed = listed_tests()
    assert len(listed) > 100
    missing = sorted(f"{path}::{name}" for path, name in listed
                     if not (ROOT / path).is_file() or name not in defined_tests(ROOT / path))
    assert not missing, missing


def test_every_test_of_the_reliability_suite_is_listed() -> None:
    listed = listed_tests()
    unlisted = sorted(
        f"{path.relative_to(ROOT)}::{name}"
        for path in sorted((ROOT / "tests").glob("test_reliability_*.py"))
        if path.name != Path(__file__).name
        for name in defined_tests(path)
        if (str(path.relative_to(ROOT)), name) not in listed
    )
    assert not unlisted, unlisted
