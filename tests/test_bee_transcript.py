"""The transcript's secret scrubbing and truncation (pure)."""

from __future__ import annotations

from hive.bee.transcript import truncate
from hive.secrets import REDACTED, Scrubber, secret_values


def test_secret_values_are_taken_from_secret_looking_names_only() -> None:
    env = {
        "OPENAI_API_KEY": "sk-test-XYZ",
        "GITHUB_TOKEN": "ghp_abcdef123",
        "DB_PASSWORD": "hunter2hunter2",
        "AWS_SECRET": "aws-secret-value",
        "FEATURE_KEY": "1",
        "HOME": "/root",
        "PATH": "/usr/bin",
    }
    assert set(secret_values(env)) == {"sk-test-XYZ", "ghp_abcdef123", "hunter2hunter2", "aws-secret-value"}


def test_scrubber_replaces_secrets_in_text_and_nested_data() -> None:
    scrub = Scrubber(secret_values({"OPENAI_API_KEY": "sk-test-XYZ", "B_TOKEN": "sk-test-XYZ-longer"}))
    assert scrub.text("key=sk-test-XYZ-longer and sk-test-XYZ") == f"key={REDACTED} and {REDACTED}"
    data = {"args": ["sk-test-XYZ", {"sk-test-XYZ": 3}], "n": 1, "ok": True}
    assert scrub.data(data) == {"args": [REDACTED, {REDACTED: 3}], "n": 1, "ok": True}


def test_truncate_marks_what_was_cut() -> None:
    assert truncate("abc", limit=5) == "abc"
    assert truncate("abcdefgh", limit=5) == "abcde\n… [transcript truncated: 3 more characters]"


def test_spent_adds_up_the_usage_lines_and_keeps_an_unpriced_cost_unknown() -> None:
    from hive.bee.transcript import spent
    from hive.providers.base import TokenUsage
    from hive.records import TranscriptEntry

    def usage(**data: object) -> TranscriptEntry:
        return TranscriptEntry(event="usage", data=data)

    assert spent([TranscriptEntry(event="reply", content="hi")]) is None
    assert spent([usage(input_tokens=10, output_tokens=5), usage(input_tokens=1, output_tokens=1)]) == TokenUsage(
        11, 6, None)
    assert spent([usage(input_tokens=10, output_tokens=5, cost_usd=0.5), usage(tokens=7),
                  usage(input_tokens="x", output_tokens=float("inf"), cost_usd=-1)]) == TokenUsage(17, 5, 0.5)
