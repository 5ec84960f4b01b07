"""Angle planning before the bees start, and the final answer after they end.

Both are one model call with a deterministic fallback: a planning failure falls back to generic angles,
a synthesis failure to a digest of the reports and the board. The run says which happened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from hive.board import BoardState
from hive.providers.base import Message, Model, ModelSettings
from hive.records import Note
from hive.wording import plural

GENERIC_ANGLES = (
    "Reproduce the problem: find the shortest command or test that shows it, and what it prints.",
    "Trace the data or control flow from the entry point to where the symptom appears; find the code that causes it.",
    "Check recent changes, configuration and the environment (versions, settings, inputs) for what differs.",
    "Read the tests and documentation for the behaviour that is expected; find where the code departs from it.",
    "Look for edge cases: empty, large, concurrent or malformed inputs, and error handling that hides failures.",
    "Question the premise: look for evidence that the problem lies somewhere other than where it seems.",
)


@dataclass(frozen=True)
class BeeReport:
    bee: str
    angle: str
    outcome: str
    reason: str | None
    text: str


PLANNING_TIMEOUT = 120.0
ANSWER_TIMEOUT = 180.0
"""Seconds for one attempt at the coordinator's own calls, unless ``HIVE_MODEL_TIMEOUT`` says otherwise: the
answer reads every report and the board, so it gets longer than a bee's turn."""


async def plan_angles(model: Model, problem: str, n: int, request_timeout: float = PLANNING_TIMEOUT) -> list[str]:
    """Ask the model for ``n`` distinct, self-contained angles. Raises ValueError when the reply is unusable."""
    prompt = (
        f"Problem to investigate in a code repository:\n{problem}\n\n"
        f"Propose {n} distinct, self-contained angles for {n} investigators working in parallel. Each angle is "
        "one or two sentences that say what to examine and how, without overlapping the others. "
        f"Reply with only a JSON array of {n} strings."
    )
    reply = await model.request(
        [Message("system", "You plan parallel code investigations."), Message("user", prompt)],
        None,
        ModelSettings(timeout=request_timeout, temperature=0.2),
    )
    return parse_angles(reply.text, n)


def parse_angles(text: str, n: int) -> list[str]:
    match = re.search(r"\[.*\]", text, re.DOTALL)
    if match is None:
        raise ValueError("no JSON array in the planner's reply")
    try:
        value = orjson.loads(match.group(0))
    except orjson.JSONDecodeError as e:
        raise ValueError(f"the planner's JSON does not parse: {e}") from e
    # Distinct angles: two bees on the same angle would only duplicate each other's work.
    by_words: dict[str, str] = {}
    for item in value:
        if isinstance(item, str) and item.strip():
            angle = " ".join(item.split())
            by_words.setdefault(angle.casefold(), angle)
    angles = list(by_words.values())
    if len(angles) < n:
        raise ValueError(f"the planner gave {plural(len(angles), 'distinct usable angle')}, not {n}")
    return angles[:n]


def fallback_angles(n: int, role_angles: Sequence[str] = ()) -> list[str]:
    pool = list(role_angles) + [a for a in GENERIC_ANGLES if a not in role_angles]
    return pool[:n]


def board_sections(state: BoardState) -> str:
    """The board part of the answer, written by rule: standing, corrected, unsettled."""
    contested = state.contested_ids()
    standing = sorted(state.standing(), key=lambda n: -n.score)
    lines = [f"## Board: {plural(len(state.notes), 'note')}, {len(state.superseded)} corrected, "
             f"{len(state.contested())} unsettled"]
    lines += [_note_line(state, n, contested) for n in standing] or ["(no notes passed the gates)"]
    if state.superseded:
        lines += ["", "## Corrected, no longer standing"]
        for earlier, later in state.superseded.items():
            a, b = state.notes[earlier], state.notes[later]
            lines.append(f"- {a.bee} ({a.kind}): {_quote(a.text)} → corrected by {b.bee}: {_quote(b.text)}")
    unsettled = state.contested()
    if unsettled:
        lines += ["", "## Unsettled disputes, both sides kept"]
        for earlier, later in unsettled:
            a, b = state.notes[earlier], state.notes[later]
            lines.append(f"- {a.bee} says {_quote(a.text)} but {b.bee} says {_quote(b.text)}")
    return "\n".join(lines)


def _note_line(state: BoardState, note: Note, contested: set[str]) -> str:
    marks = []
    if state.confirmations(note.id):
        marks.append("confirmed by " + ", ".join(sorted(state.confirmed_by[note.id])))
    if note.id in contested:
        marks.append("in dispute")
    to = state.recipients.get(note.id)
    route = f" → {', '.join(to)}" if to else ""
    suffix = f" ({'; '.join(marks)})" if marks else ""
    # One line per note, whatever the bee wrote: a line break in a note must not make a board item of its own.
    return f"- [{note.kind} {note.score:.2f}] {note.bee}{route}{suffix}: {' '.join(note.text.split())}"


def _quote(text: str, width: int = 400) -> str:
    text = " ".join(text.split())
    return f'"{text if len(text) <= width else text[: width - 1] + "…"}"'


def reports_section(reports: Sequence[BeeReport]) -> str:
    parts = []
    for r in reports:
        reason = f": {r.reason}" if r.reason else ""
        body = nested_under(r.text.strip(), REPORT_LEVEL) or "(no report)"
        parts.append(f"{'#' * REPORT_LEVEL} {r.bee} [{r.outcome}{reason}]\nAngle: {r.angle}\n\n{body}")
    return "\n\n".join(parts)


REPORT_LEVEL = 3
"""Each bee's report is a level-3 section of answer.md's ``## Reports``."""
_HEADING = re.compile(r"^(#{1,6})(?=[ \t]|$)")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def nested_under(markdown: str, level: int) -> str:
    """``markdown`` with its headings moved down so that its highest one sits just below ``level`` (a report's
    ``## Found`` under a bee's ``### bee-1`` becomes ``#### Found``), keeping their order; code blocks stay as
    they are. Headings are never deeper than 6."""
    lines = markdown.split("\n")
    fenced = False
    headings: list[tuple[int, int]] = []  # (line index, level)
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            headings.append((index, len(match[1])))
    if not headings:
        return markdown
    shift = max(0, level + 1 - min(depth for _, depth in headings))
    for index, depth in headings:
        lines[index] = "#" * min(6, depth + shift) + lines[index][depth:]
    return "\n".join(lines)


async def synthesize(model: Model, problem: str, reports: Sequence[BeeReport], state: BoardState,
                     request_timeout: float = ANSWER_TIMEOUT) -> str:
    """The main model's answer: answer first, then the evidence."""
    prompt = (
        f"Problem:\n{problem}\n\nThe investigators' final reports:\n\n{reports_section(reports)}\n\n"
        f"The shared board, as the judge kept it:\n{board_sections(state)}\n\n"
        "Write the answer to the problem for the person who asked. Answer first, in a few sentences; then the "
        "evidence, citing path:line or commands from the reports. Do not present disputed or corrected notes as "
        "settled. Use Markdown."
    )
    reply = await model.request(
        [Message("system", "You synthesize the findings of a team of code investigators."),
         Message("user", prompt)],
        None,
        ModelSettings(timeout=request_timeout, temperature=0.2),
    )
    if not reply.text.strip():
        raise ValueError("the model returned an empty answer")
    return reply.text.strip()


def compose_answer(problem: str, body: str, reports: Sequence[BeeReport], state: BoardState,
                   note: str | None = None) -> str:
    """answer.md: the answer, the board (corrected and unsettled sections by rule), then the reports."""
    head = f"# {problem.splitlines()[0][:200]}\n\n"
    if note:
        head += f"> {note}\n\n"
    return f"{head}{body.strip()}\n\n{board_sections(state)}\n\n## Reports\n\n{reports_section(reports)}\n"


def digest(reports: Sequence[BeeReport]) -> str:
    """A deterministic stand-in for the synthesis: each bee's Found section, or its report's start."""
    lines = ["## Answer (digest of the reports)"]
    for r in reports:
        found = _section(r.text, "Found") or r.text.strip()[:1200] or "(no report)"
        lines.append(f"- **{r.bee}** ({r.outcome}): {' '.join(found.split())}")
    return "\n".join(lines)


def _section(text: str, name: str) -> str | None:
    match = re.search(rf"(?im)^\W*{name}\W*$\n(.*?)(?=^\W*(found|ruled out|open)\W*$|\Z)", text, re.DOTALL)
    return match.group(1).strip() if match else None
