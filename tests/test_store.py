"""The append-only JSON-lines store: whole lines out, complete lines in, damage skipped and named."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hive.errors import StoreError
from hive.records import BOARD_ADAPTER, Note, RunInfo
from hive.store import JsonlReader, JsonlWriter, dumps, read_all, write_json_atomic

AT = "2026-11-30T03:04:05.123Z"


def note(n: int, bee: str = "bee-1") -> Note:
    return Note(id=f"n{n}", bee=bee, kind="finding", text=f"finding number {n}", score=0.5, at=AT)


def append_raw(path: Path, data: bytes) -> None:
    """Bytes written the way a crashed or foreign writer might leave them."""
    with open(path, "ab") as f:
        f.write(data)


def test_writer_appends_whole_lines_and_reader_gets_them_back(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    with JsonlWriter(path) as writer:
        for n in range(3):
            writer.append(note(n))
        assert writer.lines == 3
    assert path.read_bytes() == b"".join(dumps(note(n)) for n in range(3))
    reader = JsonlReader(path, BOARD_ADAPTER)
    assert reader.read_new() == [note(n) for n in range(3)]
    assert reader.offset == path.stat().st_size
    assert reader.warnings == []


def test_writer_creates_missing_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "bees" / "bee-1" / "transcript.jsonl"
    with JsonlWriter(path, durable=True) as writer:
        writer.append(note(1))
    assert path.read_bytes() == dumps(note(1))


def test_a_second_writer_appends_after_the_first(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    with JsonlWriter(path) as writer:
        writer.append(note(1))
    with JsonlWriter(path) as writer:
        writer.append(note(2))
    assert read_all(path, Note) == ([note(1), note(2)], [])


def test_a_writer_that_finds_a_torn_tail_does_not_lose_its_first_line(tmp_path: Path) -> None:
    # An earlier writer died mid-line; without care the next line would be glued to its fragment.
    path = tmp_path / "board.jsonl"
    append_raw(path, dumps(note(1)) + dumps(note(2))[:25])
    with JsonlWriter(path) as writer:
        writer.append(note(3))
        writer.append(note(4))
    records, warnings = read_all(path, BOARD_ADAPTER)
    assert records == [note(1), note(3), note(4)]
    assert len(warnings) == 1 and ": line 2: " in warnings[0]


def test_a_write_that_fails_part_way_does_not_swallow_the_next_line(tmp_path: Path) -> None:
    # A file-size limit makes write(2) store part of a line and then fail, as a full disk does.
    # Run in a child process so the limit cannot touch the test runner.
    path = tmp_path / "board.jsonl"
    first, second, third = dumps(note(1)), dumps(note(2)), dumps(note(3))
    limit = len(first) + 20
    script = f"""
import resource, signal, sys
from pathlib import Path
from hive.errors import StoreError
from hive.store import JsonlWriter
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
writer = JsonlWriter(Path({str(path)!r}))
writer.append_bytes({first!r})
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
try:
    writer.append_bytes({second!r})
except StoreError as e:
    print("StoreError:", e)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
writer.append_bytes({third!r})
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("StoreError: cannot append to")
    assert first + second[:20] + b"\n" + third == path.read_bytes()  # the fragment, then a fresh line
    records, warnings = read_all(path, BOARD_ADAPTER)
    assert records == [note(1), note(3)]
    assert len(warnings) == 1 and ": line 2: " in warnings[0]


def test_incremental_reads_return_only_what_is_new(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    reader = JsonlReader(path, BOARD_ADAPTER)
    with JsonlWriter(path) as writer:
        writer.append(note(1))
        assert reader.read_new() == [note(1)]
        assert reader.read_new() == []
        writer.append(note(2))
        writer.append(note(3))
        assert reader.read_new() == [note(2), note(3)]
        assert reader.read_new() == []
    assert reader.line_no == 3


def test_a_reader_can_start_before_the_file_exists(tmp_path: Path) -> None:
    path = tmp_path / "gate.jsonl"
    reader = JsonlReader(path, Note)
    assert reader.read_new() == []
    assert list(reader) == []
    with JsonlWriter(path) as writer:
        writer.append(note(1))
    assert list(reader) == [note(1)]


def test_a_torn_last_line_waits_until_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    line = dumps(note(2))
    append_raw(path, dumps(note(1)) + line[:10])
    reader = JsonlReader(path, BOARD_ADAPTER)
    assert reader.read_new() == [note(1)]
    offset = reader.offset
    assert offset == len(dumps(note(1)))
    assert reader.read_new() == []
    assert reader.offset == offset
    append_raw(path, line[10:-1])  # everything but the newline: still torn
    assert reader.read_new() == []
    append_raw(path, b"\n")
    assert reader.read_new() == [note(2)]
    assert reader.read_new() == []
    assert reader.warnings == []


def test_a_file_holding_only_a_torn_line_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    append_raw(path, dumps(note(1))[:-1])
    assert read_all(path, BOARD_ADAPTER) == ([], [])


def test_a_corrupt_middle_line_is_skipped_with_a_warning_naming_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "board.jsonl"
    append_raw(path, dumps(note(1)) + b'{"type":"note","id":"n2","bee"\n' + dumps(note(3)))
    reader = JsonlReader(path, BOARD_ADAPTER)
    with caplog.at_level(logging.WARNING, logger="hive.store"):
        assert reader.read_new() == [note(1), note(3)]
    assert len(reader.warnings) == 1
    assert reader.warnings[0].startswith(f"{path}: line 2: skipped a corrupt line (")
    assert [r.getMessage() for r in caplog.records] == reader.warnings


def test_line_numbers_in_warnings_count_across_incremental_reads(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    reader = JsonlReader(path, BOARD_ADAPTER)
    append_raw(path, dumps(note(1)) + dumps(note(2)))
    assert reader.read_new() == [note(1), note(2)]
    append_raw(path, b"\n" + dumps(note(4)) + b"not json at all\n" + dumps(note(6)))
    assert reader.read_new() == [note(4), note(6)]
    assert len(reader.warnings) == 1
    assert ": line 5: " in reader.warnings[0]


@pytest.mark.parametrize(
    "bad",
    [
        b"{]",
        b'"just a string"',
        b"[1, 2, 3]",
        b'{"type":"note","id":"n9"}',  # valid JSON, not a valid note
        b'{"type":"rumour","id":"n9"}',
        b'{"type":"note","id":"n9","bee":"bee-1","kind":"finding","text":"\xff\xfe","score":0.5}',
        b"\x00\x00\x00",  # what a crash can leave in a sparse page
        b'{"type":"note","id":"n9","bee":"bee-1","kind":"finding","text":"x","score":NaN}',
        b"{\r}",  # a stray carriage return must not shift later line numbers
    ],
    ids=["broken", "string", "array", "invalid", "unknown-type", "non-utf8", "nul", "nan", "carriage-return"],
)
def test_every_kind_of_corrupt_line_is_skipped_and_later_lines_still_parse(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "board.jsonl"
    append_raw(path, dumps(note(1)) + bad + b"\n" + dumps(note(3)) + b"{torn")
    records, warnings = read_all(path, BOARD_ADAPTER)
    assert records == [note(1), note(3)]
    assert len(warnings) == 1
    assert ": line 2: skipped a corrupt line" in warnings[0]


def test_empty_and_blank_lines_are_skipped_without_warning_but_counted(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    append_raw(path, b"\n" + dumps(note(1)) + b"   \n\n" + dumps(note(2)) + b"oops\n")
    reader = JsonlReader(path, BOARD_ADAPTER)
    assert reader.read_new() == [note(1), note(2)]
    assert reader.line_no == 6
    assert len(reader.warnings) == 1 and ": line 6: " in reader.warnings[0]


def test_parse_may_be_a_model_class_an_adapter_or_a_function(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    append_raw(path, dumps(note(1)))
    assert read_all(path, Note)[0] == [note(1)]
    assert read_all(path, BOARD_ADAPTER)[0] == [note(1)]
    assert read_all(path, lambda data: data["id"])[0] == ["n1"]


def test_a_line_of_a_megabyte_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "board.jsonl"
    big = Note(id="n1", bee="bee-1", kind="finding", text="é" * 600_000, score=0.5)
    reader = JsonlReader(path, BOARD_ADAPTER)
    with JsonlWriter(path) as writer:
        writer.append(big)
    assert reader.read_new() == [big]


def test_append_bytes_writes_exactly_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "raw.jsonl"
    with JsonlWriter(path) as writer:
        writer.append_bytes(b'{"a":1}\n')
    assert path.read_bytes() == b'{"a":1}\n'


# --------------------------------------------------------------------------- failures


def test_a_writer_whose_directory_cannot_be_made_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(StoreError, match="cannot open"):
        JsonlWriter(blocker / "r1" / "board.jsonl")


def test_a_writer_on_a_directory_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "board.jsonl").mkdir()
    with pytest.raises(StoreError, match=r"cannot open .*board\.jsonl"):
        JsonlWriter(tmp_path / "board.jsonl")


def test_a_full_disk_raises_store_error_on_append() -> None:
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("/dev/full is not available on this system")
    with JsonlWriter(full) as writer, pytest.raises(StoreError, match="cannot append to /dev/full"):
        writer.append(note(1))
    assert writer.lines == 0


def test_appending_to_a_closed_writer_raises_store_error(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path / "board.jsonl")
    writer.close()
    writer.close()  # closing twice is harmless
    with pytest.raises(StoreError, match="closed"):
        writer.append(note(1))


def test_a_reader_on_a_directory_raises_store_error(tmp_path: Path) -> None:
    (tmp_path / "board.jsonl").mkdir()
    with pytest.raises(StoreError, match="cannot read"):
        JsonlReader(tmp_path / "board.jsonl", BOARD_ADAPTER).read_new()


# --------------------------------------------------------------------------- run.json


def test_write_json_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    first = RunInfo(id="r1", problem="p", repo=".")
    write_json_atomic(path, first)
    second = first.model_copy(update={"status": "finished"})
    write_json_atomic(path, second)
    assert RunInfo.model_validate(orjson.loads(path.read_bytes())) == second
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_write_json_atomic_into_a_missing_directory_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot write"):
        write_json_atomic(tmp_path / "gone" / "run.json", RunInfo(id="r1", problem="p", repo="."))
    assert not (tmp_path / "gone").exists()
