"""Composed training narration for the gate heads (used by ``scripts/build_heads.py`` only, never at serving).

Real coding-agent narration is long and mixed: it restates the issue, hedges, reports a fact and then plans
the next step, narrates its own edits and searches, and complains about its own limits. Our hand-written
examples (``data/publish.jsonl``) are one clean speech act each. This module composes many more examples the
way real narration is built: an optional opener, the one part that carries the label (the *core*), an
optional elaboration, and an optional plan tail, over invented bug hunts (``HUNTS``). Labels follow the
guidelines in ``../shared/evals/README.md``: a fact followed by a plan is labelled by the fact; own-edit
reports, edit typos and capability limits are not news; environment blockers are news.

Every phrase here was written for hive; none is taken from the development set. The composition is
deterministic (one seeded ``random.Random`` per hunt), so the heads rebuild byte-identically.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Hunt:
    """One invented bug hunt: the code it is about and what is wrong."""

    repo: str
    file: str
    file2: str
    func: str
    cls: str
    arg: str
    exc: str
    symptom: str
    fix: str
    test: str
    mod: str


def _read_hunts() -> tuple[Hunt, ...]:
    text = resources.files("hive.judge.local").joinpath("data").joinpath("hunts.psv").read_text()
    return tuple(Hunt(*line.split("|")) for line in text.splitlines() if line.strip() and not line.startswith("#"))


HUNTS: tuple[Hunt, ...] = _read_hunts()
"""The invented bug hunts of ``data/hunts.psv``."""


@dataclass(frozen=True)
class Example:
    """One composed utterance with its labels and the topic (question of the hunt) it speaks to."""

    id: str
    sc: str
    topic: str
    bee: str
    kind: str
    news: bool
    text: str
    core: int
    """Index of the core phrase: examples sharing it are never split across training and scoring folds."""


# kind, news, topic, template. {script}, {line}, {line2}, {n}, {m} are filled per example.
_CORES: tuple[tuple[str, bool, str, str], ...] = (
    # routine: plans, searches, restating the issue, own edits and their typos, wrap-ups
    ("routine", False, "repro", "Let's start by reproducing the issue. I'll create a new file called `{script}` and "
     "paste the example code from the issue into it."),
    ("routine", False, "repro", "The reproduction script `{script}` has been created. Now let's add the code from the "
     "issue to it so that we can run it and observe the behaviour."),
    ("routine", False, "repro", "First, I want to see the problem for myself. I'll write a short script that builds a "
     "`{cls}` with `{arg}` set and calls `{func}`, as described in the report."),
    ("routine", False, "cause", "The issue describes that {symptom}. To get started, we should find where `{func}` is "
     "defined in the repository."),
    ("routine", False, "cause", "Let's search for the definition of `{func}` to see how it handles `{arg}`."),
    ("routine", False, "cause", "The file `{file}` is now open, but the `{func}` method is not in view yet. Let's "
     "scroll down to find it."),
    ("routine", False, "cause", "Before changing anything I want three lookups: where `{cls}` is defined, how "
     "`{func}` in `{file}` handles `{arg}`, and every other caller that passes `{arg}` in. I'll run those searches "
     "one after another."),
    ("routine", False, "cause", "Now that I have the context of `{func}`, I need to understand how `{arg}` is passed "
     "in. Let me search for the callers of `{func}` in `{file2}`."),
    ("routine", False, "cause", "The search returned {n} matches in {m} files. The most promising one seems to be "
     "`{file}`, since it is where `{cls}` lives, so let's open it and go to line {line}."),
    ("routine", False, "cause", "Given the search results, the most relevant file to check first appears to be "
     "`{file}`, which might be where `{arg}` is handled. Let's take a closer look at it."),
    ("routine", False, "cause", "The issue reports that {symptom}. According to the reporter, this only happens when "
     "`{arg}` is given explicitly. We need to look into how `{cls}` processes it."),
    ("routine", False, "cause", "We are shown lines {line} to {line2} of `{file}`. The `{func}` method continues "
     "below, so I'll scroll down to see the rest of its body."),
    ("routine", False, "fix", "The edit has been applied to `{file}`. Now let's run `{script}` again to see whether "
     "the change has the intended effect."),
    ("routine", False, "fix", "I made a mistake in the edit command: the indentation of the new block is wrong. Let "
     "me fix the indentation and issue the edit again."),
    ("routine", False, "fix", "My previous edit introduced a syntax error because of an unmatched parenthesis on "
     "line {line}. I'll correct the edit command and try once more."),
    ("routine", False, "fix", "The edit duplicated the line that assigns `{arg}`. Let me remove the duplicate line "
     "so that the method is back to a clean state before continuing."),
    ("routine", False, "fix", "I have updated `{func}` in `{file}` as planned. The file has been updated; let's "
     "review the changed lines to make sure the indentation is correct."),
    ("routine", False, "tests", "It would be helpful to look at the existing tests for `{cls}` in `{test}` to "
     "understand the expected behaviour. Let's open that file."),
    ("routine", False, "tests", "Now let's add a test case to `{test}` that covers `{arg}`, so that the behaviour is "
     "checked in the future."),
    ("routine", False, "fix", "We have completed the changes and checked them. Let's remove `{script}` since it is "
     "no longer needed, and then submit our changes to the code base."),
    ("routine", False, "cause", "Before making any changes, let's look at the surrounding code to understand how "
     "`{cls}` is constructed and where `{arg}` is stored."),
    ("routine", False, "cause", "To proceed, we need to locate the part of the code base that deals with `{arg}`. "
     "I will search the `{repo}` package for `{func}` and for the error message."),
    # findings that help a teammate
    ("finding", True, "repro", "Running `{script}` reproduces the issue: a `{exc}` is raised from `{func}` as soon as "
     "`{arg}` is passed."),
    ("finding", True, "repro", "The output confirms the problem described in the issue: {symptom}. Without `{arg}` "
     "the same call works as expected."),
    ("finding", True, "cause", "Line {line} of `{file}` passes `{arg}` on to `{file2}` without checking whether it "
     "is None, and that is where the `{exc}` comes from."),
    ("finding", True, "repro", "The traceback shows that the `{exc}` is raised in `{file}` at line {line}, inside "
     "`{func}`, when it reads `{arg}`."),
    ("finding", True, "cause", "`{func}` only handles the case where `{arg}` is a string; any other value falls "
     "through to the `else` branch at line {line}, which raises `{exc}`."),
    ("finding", True, "fix", "After the change, `{script}` runs without the error and prints the expected result, "
     "so the {exc} no longer occurs."),
    ("finding", True, "tests", "The tests in `{test}` pass with the change applied: {n} passed, 0 failed."),
    ("finding", True, "cause", "The default value of `{arg}` in `{cls}.__init__` is `None`, and `{func}` never "
     "replaces it with the documented default, which explains the behaviour in the issue."),
    ("finding", True, "cause", "The search results show that `{func}` is called from two places, `{file}` and "
     "`{file2}`, and only the first one passes `{arg}` through."),
    ("finding", True, "cause", "Looking at the code of `{func}`, it copies `{arg}` before the loop at line {line}, "
     "so any change made later by `{cls}` is silently lost."),
    ("finding", True, "repro", "Interestingly, the bug only shows up with `{arg}` set; with the default the script "
     "prints the correct value. The failure also depends on the order of the calls."),
    ("finding", True, "cause", "The `{cls}` class stores `{arg}` in a private attribute, but `{func}` reads the "
     "public one, which is never updated after construction."),
    ("finding", True, "tests", "Running the existing test module `{test}` gives {m} failures even without any "
     "change, all of them in tests that touch `{arg}`."),
    ("finding", False, "cause", "We have found the `{func}` method in `{file}` at line {line}, as expected."),
    ("finding", False, "cause", "The `{cls}` class is defined in `{file}`, as its name suggests."),
    # dead ends
    ("dead_end", True, "repro", "The script ran successfully without any error, so the bug does not reproduce with "
     "the example from the issue."),
    ("dead_end", True, "fix", "Unfortunately, the change did not fix the issue: `{script}` still raises the same "
     "`{exc}` at line {line}."),
    ("dead_end", True, "cause", "The search for `{func}` in `{file2}` returned no matches, so the behaviour is not "
     "implemented there."),
    ("dead_end", True, "cause", "I read through `{file2}`, but it does not touch `{arg}` at all; it is not where the "
     "problem comes from."),
    ("dead_end", True, "fix", "The patch makes the reproduction pass, but {m} tests in `{test}` now fail, so this "
     "approach is not acceptable and I have reverted it."),
    ("dead_end", True, "repro", "Setting `{arg}` explicitly did not change the output; the problem persists exactly "
     "as before, so `{arg}` is not the trigger."),
    ("dead_end", True, "fix", "Wrapping the call in a try/except only hides the `{exc}`; the result is still wrong, "
     "so that idea was a dead end."),
    # decisions
    ("decision", True, "fix", "The fix is to {fix} in `{func}`."),
    ("decision", True, "fix", "To resolve this issue, we need to modify `{func}` in `{file}` so that it does the "
     "following: {fix}."),
    ("decision", True, "fix", "Bug location: file `{file}`, class `{cls}`, method `{func}`. The method should {fix}."),
    ("decision", True, "fix", "I'll go with a change inside `{func}` rather than changing the callers in `{file2}`: "
     "{fix}. This keeps the public behaviour of `{cls}` unchanged."),
    ("decision", True, "fix", "Given this, the proper place for the fix is `{func}` around line {line}. We need to "
     "ensure that it will {fix}."),
    ("decision", True, "fix", "Rather than changing the default of `{arg}`, I've decided to document the current "
     "behaviour in the docstring of `{cls}` and leave the code as it is."),
    # environment blockers (news) and self-declared limits (not news)
    ("blocker", True, "env", "Running the script fails immediately with `ModuleNotFoundError: No module named "
     "'{mod}'`. The package is not installed in this environment and cannot be installed, so nothing that imports "
     "`{repo}` can run here."),
    ("blocker", True, "env", "Python here is 3.6, and `subprocess.run` rejects the keyword our helper script passes, "
     "so the script stops before it reaches `{func}`; the interpreter is too old for it as written."),
    ("blocker", True, "env", "The test run timed out after 300 seconds before a single test in `{test}` finished, so "
     "the suite cannot be used to check the change."),
    ("blocker", True, "env", "We cannot find `{file}` in the current environment: the project files do not seem to "
     "be present in the checkout at all."),
    ("blocker", True, "env", "Importing `{repo}` fails with `ImportError: cannot import name '_speedups'`: the C "
     "extensions are not built, and building them needs a compiler that is not available."),
    ("blocker", True, "env", "The script fails with `ImproperlyConfigured: Requested setting INSTALLED_APPS, but "
     "settings are not configured`, so it cannot run outside a configured project."),
    ("blocker", True, "env", "Running the tests fails with `OperationalError: no such table: {repo}_{arg}`; the test "
     "database has not been migrated in this environment."),
    ("blocker", False, "env", "I cannot run tests or execute scripts in this environment, so I am unable to verify "
     "the patch for `{func}` directly."),
    ("blocker", False, "env", "As an AI, I do not have the ability to edit files here; editing is not feasible in "
     "this interface. Below is the change I would make to `{func}` instead."),
    ("blocker", False, "env", "Due to the limitations of this interface, I am unable to perform further searches "
     "across the `{repo}` code base beyond the provided API."),
    # the same acts in the longer, hedged register real narration mostly uses
    ("routine", False, "cause", "Given the size of `{file}` and the number of places that mention `{arg}`, it is not "
     "immediately clear where the behaviour described in the issue comes from. It might be in `{func}`, but it "
     "could also be in one of the helpers, so a more targeted look is needed."),
    ("routine", False, "cause", "Given the search results, it seems the most promising place to start is `{file}`, "
     "since it appears to contain the logic for `{cls}`. The other matches are mostly in tests and documentation, "
     "which are less likely to be relevant at this stage."),
    ("routine", False, "repro", "The script `{script}` has been updated with the example from the issue, along with "
     "a try/except block that prints any exception. This setup should help us confirm whether the bug is present "
     "in this version of `{repo}`."),
    ("routine", False, "fix", "The `{func}` method has been updated to check `{arg}` before using it. This change "
     "aims to address the issue by making sure the value is valid early in the process, and it should not affect "
     "the other code paths."),
    ("routine", False, "fix", "With `{file}` changed, what remains is checking that nothing else broke: I would run "
     "the `{cls}` tests and read the diff once more for typos before calling it done."),
    ("routine", False, "cause", "In order to understand how `{arg}` flows through `{cls}`, I would like to gather "
     "more context. Specifically, I want to see the signature of `{func}` and the places where `{cls}` is "
     "instantiated, which should tell us whether the value is normalised anywhere."),
    ("routine", False, "cause", "Now that we're at the right place in `{file}`, let's look more closely at "
     "`{func}` and see how it could be changed to deal with `{arg}`, as described in the issue."),
    ("routine", False, "cause", "The issue mentions `{exc}` and points at `{func}`, and the traceback quoted by the "
     "reporter goes through `{file2}` as well. To address the issue, we need to inspect both of these areas to "
     "understand how they interact."),
    ("routine", False, "fix", "It seems the edit command failed again because of the indentation, even though I "
     "tried to correct it. Let me rewrite the whole block with consistent four-space indentation and reissue the "
     "edit."),
    ("routine", False, "cause", "The `{file2}` module provides general helpers used across `{repo}`, as described "
     "in its docstring. It is referenced by `{func}`, so it may be relevant, but nothing in it stands out yet."),
    ("finding", True, "repro", "Running the reproduction gives the `{exc}` from the report when `{arg}` is passed, "
     "every time. Now I'll find where in `{file}` it is raised to work out why."),
    ("finding", True, "cause", "The search results indicate that `{arg}` is only read in `{func}`, at line {line} "
     "of `{file}`, and nowhere in `{file2}`. This suggests that `{func}` is the only place where the value can be "
     "lost, which narrows the search considerably."),
    ("finding", True, "cause", "Looking at the section around lines {line}-{line2}, `{func}` calls the helper from "
     "`{file2}` before `{arg}` has been validated. When `{arg}` is empty, the helper returns early and the "
     "`{exc}` is raised a few lines later, which matches the traceback in the issue."),
    ("finding", True, "cause", "It appears that `{cls}` overrides `{func}` and does not call the parent "
     "implementation, so the handling of `{arg}` added upstream never runs for this class. This could explain why "
     "only `{cls}` is affected."),
    ("finding", True, "fix", "After the change in `{file}` the reproduction finishes with no `{exc}` and prints "
     "the values the report expected, so that change fixes it."),
    ("finding", True, "cause", "The error occurs because `{func}` divides by the length of `{arg}` at line {line}, "
     "and that length is zero when the input is empty. This happens whenever the caller passes an empty value, "
     "which the issue's example does."),
    ("dead_end", True, "repro", "No `{exc}` appeared when the reproduction ran, unlike in the report; either this "
     "setup differs from the reporter's or my script misses a condition the bug needs."),
    ("dead_end", True, "cause", "It appears that `{func}` is not present in `{file2}` at all. This suggests that the "
     "behaviour is handled in a different part of `{repo}`, so my first guess about the location was wrong."),
    ("dead_end", True, "cause", "After looking more closely at `{file2}`, it seems the problem might not be related "
     "to the code in this file after all; it handles `{arg}` correctly in every branch, and the issue is more "
     "likely a symptom of something that happens earlier."),
    ("dead_end", True, "fix", "The new error shows that my change to `{func}` introduced a circular import between "
     "`{file}` and `{file2}`, so this version of the fix does not work and has to be reconsidered."),
    ("dead_end", True, "fix", "Even with the change, running `{script}` still produces the wrong value for `{arg}`. "
     "So adjusting `{func}` alone does not address the root cause of the problem."),
    ("dead_end", True, "cause", "My search for the error message in the `{repo}` sources returned no results. It is "
     "possible that the message is built dynamically, so searching for the literal text was not helpful."),
    ("decision", True, "fix", "Based on the analysis, the most likely place for the bug is `{func}` in `{file}`. "
     "To address the issue, we need to add a check so that it will {fix}, and leave `{file2}` unchanged."),
    ("decision", True, "fix", "I'm going to change `{func}` so that it will {fix}. This is preferable to adding a "
     "special case in `{cls}`, because the other callers benefit from the same behaviour."),
    ("decision", True, "fix", "The root cause is in `{func}`, so that is where the patch will go: it should {fix}. "
     "I will not touch the public signature of `{cls}`."),
    ("decision", True, "fix", "To fix this, the solution is to {fix}. We will make this change in `{file}` and add "
     "a regression test to `{test}`."),
    ("blocker", True, "env", "It seems we cannot locate `{test}` or any other file of the `{repo}` project in the "
     "current environment. Given this, proceeding directly with the resolution is not possible here, since the "
     "source tree we are supposed to work on is missing."),
    ("blocker", True, "env", "The error indicates that the installed version of Python is 3.6, while `{repo}` "
     "needs at least 3.8 for the syntax used in `{file}`, so the module cannot even be imported here."),
    ("blocker", True, "env", "Running the reproduction fails with `ImportError: No module named '{mod}'`. The "
     "dependency is missing from the environment and pip cannot reach the package index, so we cannot run anything "
     "that imports `{repo}`."),
    ("blocker", False, "env", "After several failed edits I'll stop editing `{file}` here and instead describe "
     "what the change to `{func}` should be, since this interface keeps rejecting my attempts."),
    ("blocker", False, "env", "Without the ability to directly run and test the code, and given the complexity of "
     "`{cls}`, proposing a precise patch is challenging. I can only describe the likely change in general terms."),
    ("blocker", False, "env", "As an assistant working through this command-line interface, I do not execute "
     "Python code myself. I can only navigate and edit files, so I cannot confirm the result of `{script}`."),
)

_OPENERS: dict[str, tuple[str, ...]] = {
    "any": (
        "The issue is about how `{cls}` handles `{arg}`.",
        "We are investigating why {symptom}.",
        "Thank you for the additional context.",
        "Here is what we know so far.",
        "Thank you for providing the search results.",
        "Let's think about what we have seen so far.",
        "Given the information gathered from the previous searches, here is where we stand.",
    ),
}

_ELABORATIONS: dict[str, tuple[str, ...]] = {
    "routine": (
        "This should give us a better picture of the code path involved.",
        "That way we can compare the behaviour before and after any change.",
        "It might also be useful to keep the error message from the issue at hand.",
    ),
    "finding": (
        "This means that `{arg}` never reaches `{func}` in the failing case.",
        "This is consistent with the traceback quoted in the issue.",
        "So the problem is not in the caller but in how `{cls}` stores `{arg}`.",
        "It seems this is the root of the issue, although I have not checked the other callers yet.",
        "That would explain why only some users see the `{exc}`.",
    ),
    "dead_end": (
        "Perhaps the installed version differs from the one in the report.",
        "So the cause must be somewhere else, probably closer to `{func}`.",
        "We need a different approach.",
        "It seems my first hypothesis was wrong.",
    ),
    "decision": (
        "This keeps the existing behaviour for the common case and only changes the path that raises `{exc}`.",
        "It is the smallest change that addresses the issue and it does not touch the public API.",
        "Other callers of `{func}` are not affected by this.",
    ),
    "blocker": (
        "This is a problem with the environment rather than with the code in question.",
        "Without it we cannot run the reproduction script or the test suite.",
        "However, I can still reason about the code from the snippets we have retrieved.",
    ),
}

_TAILS: tuple[str, ...] = (
    "Let's open `{file}` and look at `{func}` next.",
    "Next, we should look at how `{func}` is called from `{file2}`.",
    "To proceed, I will search for `{func}` in the code base.",
    "Let's scroll down to see the rest of the method.",
    "Now let's create a test for this in `{test}`.",
    "I'll now edit the file to apply the change.",
    "Let's run `{script}` again to double-check.",
    "Next, I will examine the tests in `{test}` to see what they expect.",
    "Let me look at the git history of `{file}` to understand why it was written this way.",
    "The next step is to locate where `{func}` is called so that we can understand the full picture.",
    "To address the issue, we will need to look more closely at `{file2}` as well.",
    "Let's navigate to line {line} to inspect the code in more detail.",
    "We should then review the tests in `{test}` to make sure nothing else relies on this behaviour.",
)

_SCRIPTS = ("reproduce.py", "repro_bug.py", "reproduce_issue.py", "test_bug.py", "replicate_bug.py", "bug_check.py")
_BEES = ("b1", "b2", "b3")
_SEED = 20261130
# Share of each kind among composed examples: routine is the commonest in real narration.
_KIND_SHARE = {"routine": 0.38, "finding": 0.24, "dead_end": 0.13, "decision": 0.12, "blocker": 0.13}
_MARKERS = {"finding": "FOUND:", "dead_end": "DEAD END:", "decision": "DECIDED:", "blocker": "BLOCKED:"}
MARKED_SHARE = 0.3
"""Share of composed findings, dead ends, decisions and blockers that start with the marker hive's roles ask
bees to use (``FOUND:`` …): real bees write them, the development set's agents never did, and without
marked examples the heads could not learn what a marker says."""


def _fill(template: str, hunt: Hunt, rng: random.Random) -> str:
    line = rng.randrange(40, 1900)
    return template.format(
        repo=hunt.repo, file=hunt.file, file2=hunt.file2, func=hunt.func, cls=hunt.cls, arg=hunt.arg,
        exc=hunt.exc, symptom=hunt.symptom, fix=hunt.fix, test=hunt.test, mod=hunt.mod,
        script=rng.choice(_SCRIPTS), line=line, line2=line + rng.choice((20, 50, 100)),
        n=rng.randrange(3, 180), m=rng.randrange(2, 9),
    )


def _compose(kind: str, core: str, hunt: Hunt, rng: random.Random, marked: bool = False) -> str:
    opener = rng.choice(_OPENERS["any"]) if rng.random() < 0.25 else None  # drawn either way: same stream
    parts = [_MARKERS[kind]] if marked else [opener] if opener else []
    parts.append(core)
    if rng.random() < 0.5:
        parts.append(rng.choice(_ELABORATIONS[kind]))
    if rng.random() < (0.35 if kind == "routine" else 0.55):
        parts.append(rng.choice(_TAILS))
    return _fill(" ".join(parts), hunt, rng)


def compose_examples(per_hunt: int = 30) -> list[Example]:
    """``per_hunt`` labelled utterances for each invented hunt, deterministic for a given ``per_hunt``."""
    examples: list[Example] = []
    for h, hunt in enumerate(HUNTS):
        rng = random.Random(_SEED + h)
        marking = random.Random(_SEED - h)  # its own stream, so the unmarked texts stay as they were
        django_only = "settings are not configured"
        cores = [c for c in _CORES if hunt.repo == "django" or django_only not in c[3]]
        by_kind = {kind: [c for c in cores if c[0] == kind] for kind in _KIND_SHARE}
        index = {c: i for i, c in enumerate(_CORES)}
        for i in range(per_hunt):
            kind = rng.choices(list(_KIND_SHARE), weights=list(_KIND_SHARE.values()))[0]
            chosen = rng.choice(by_kind[kind])
            _, news, topic, core = chosen
            marked = kind in _MARKERS and marking.random() < MARKED_SHARE
            examples.append(Example(
                id=f"g{h:02d}-{i:02d}", sc=f"g{h:02d}", topic=topic, bee=rng.choice(_BEES), kind=kind,
                news=news, text=_compose(kind, core, hunt, rng, marked), core=index[chosen],
            ))
    return examples
