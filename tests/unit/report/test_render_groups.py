"""Group tomography's evidence in the text summary."""

from __future__ import annotations

from fabricdoc.model.evidence import GroupLoadEvidence
from fabricdoc.report.evidence_text import evidence_line


def test_group_load_evidence_reads_as_a_sentence_with_its_loads_and_escaped_alternatives():
    ev = GroupLoadEvidence(tests=9, failing=3, failing_flows=4, passing_flows=1, worst_ratio=0.31,
                           toward=("leaf02", 5), pair_tests=6, alternatives=("spine\x1b[2J01",))
    line = evidence_line(ev)
    assert line.startswith("3 group tests failing with >=4 flows on it toward leaf02[5], passing with <=1 (worst 31%)")
    assert "6 pair tests through it, 0 slow" in line and "\x1b" not in line
    slow = evidence_line(GroupLoadEvidence(tests=8, failing=8, failing_flows=1, passing_flows=0, worst_ratio=0.4))
    assert "no passing test crossed it" in slow


def test_the_summary_counts_group_tests_next_to_the_pairs():
    from fabricdoc.report.render import summary_text
    from fabricdoc.sweep import SweepConfig, run_sweep

    report = run_sweep(SweepConfig(fabric="demo", groups=True))
    assert report.tests["groups_tested"] > 0
    line = next(ln for ln in summary_text(report).splitlines() if ln.startswith("tested:"))
    t = report.tests
    assert f"{t['groups_tested']} group tests in {t['group_rounds']} rounds ({t['groups_failing']} failing, " \
           "0 could not run)" in line
    # Pair rounds and group rounds are counted apart: the pair rounds are those the pairs ran in.
    assert f"bandwidth tests in {len({p.round for p in report.pairs})} rounds" in line
    assert t["rounds"] == len({p.round for p in report.pairs})
    assert "group tests" not in summary_text(run_sweep(SweepConfig(fabric="demo")))
