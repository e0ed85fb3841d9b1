"""One Verdict type: its exit code and its meaning, said the same in the help, the README and the schema."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabricdoc.model.findings import Finding
from fabricdoc.model.verdict import EXIT_CANNOT_RUN, EXIT_FAULTS, EXIT_OK, Verdict
from fabricdoc.report.coverage import Coverage
from fabricdoc.report.report import verdict_of
from fabricdoc.report.schema import REPORT_SCHEMA

README = Path(__file__).resolve().parents[3] / "README.md"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_each_verdict_has_its_exit_code_and_rank():
    assert [v.exit_code for v in Verdict] == [EXIT_OK, EXIT_FAULTS, EXIT_FAULTS, EXIT_CANNOT_RUN]
    assert sorted(Verdict, key=lambda v: v.rank) == [Verdict.PASS, Verdict.INCOMPLETE, Verdict.DEGRADED, Verdict.FAIL]
    assert Verdict.parse("fail") is Verdict.FAIL and Verdict.parse("garbled") is Verdict.INCOMPLETE
    assert Verdict.FAIL == "fail"  # a report's JSON keeps the plain string


def test_verdict_of_findings_and_coverage():
    warn = Finding("", "link", "x", "degraded_bandwidth", "warning", 0.9)
    err = Finding("", "link", "y", "down", "error", 0.99)
    unseen = Coverage()
    unseen.add("node0001", "no counters")
    assert verdict_of([]) is Verdict.PASS
    assert verdict_of([], unseen) is Verdict.INCOMPLETE
    assert verdict_of([warn], unseen) is Verdict.DEGRADED
    assert verdict_of([warn, err]) is Verdict.FAIL


def test_readme_states_every_verdict_in_the_declared_words():
    readme = _flat(README.read_text())
    for v in Verdict:
        assert _flat(f"`{v.value}` (exit {v.exit_code}): {v.meaning}") in readme, v


def test_schema_lists_the_declared_verdicts_and_their_meanings():
    prop = REPORT_SCHEMA["properties"]["verdict"]
    assert prop["enum"] == [v.value for v in Verdict]
    for v in Verdict:
        assert f"{v.value} (exit {v.exit_code}): {v.meaning}" in prop["description"]


@pytest.mark.parametrize("command", ["sweep", "analyze", "summary", "schema"])
def test_help_of_every_command_with_a_verdict_states_them(command):
    out = subprocess.run([sys.executable, "-m", "fabricdoc", command, "--help"], capture_output=True, text=True,
                         check=True).stdout
    for v in Verdict:
        assert _flat(f"{v.value} (exit {v.exit_code}): {v.meaning}") in _flat(out), (command, v)
