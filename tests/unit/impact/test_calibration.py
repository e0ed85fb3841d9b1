"""Calibrated expected busbw: efficiency learned from healthy tests per message size, or given; never invented."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fabricdoc.errors import ConfigError
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.calibration import (
    expected_section,
    given_efficiency,
    learned_efficiency,
    parse_size,
    sharp_busbw,
)
from fabricdoc.impact.section import impact_section
from fabricdoc.model.findings import Finding
from tests.helpers.evidence import slow_pairs

MIB = 1 << 20


def _pair(ratio, size=256 * MIB, status="ok", slow=None):
    return {"src": ["a", 1], "dst": ["b", 1], "status": status, "busbw_gbps": 400 * ratio, "expected_gbps": 400,
            "ratio": ratio, "size_bytes": size, **({} if slow is None else {"slow": slow})}


def test_the_efficiency_is_the_median_of_healthy_tests_per_size_slow_and_failed_tests_left_out():
    # 0.4 is judged slow in its report; 0.45 was not judged (an older report) but is far below the bulk.
    eff = learned_efficiency([{"pairs": [_pair(0.9, slow=False), _pair(0.92), _pair(0.4, slow=True), _pair(0.45),
                                         _pair(0.95, status="hung"), _pair(0.6, size=MIB), _pair(0.7, size=MIB)]},
                              {"pairs": [_pair(0.94)]}])
    # The median is taken in log units (efficiencies multiply): of two tests, their geometric mean.
    assert eff.by_size == {256 * MIB: 0.92, MIB: round((0.6 * 0.7) ** 0.5, 4)}
    assert eff.tests == {256 * MIB: 3, MIB: 2}
    assert eff.source == "learned from 5 healthy tests in 2 reports"


def test_without_healthy_tests_there_is_no_efficiency_and_the_section_says_the_figures_are_nominal():
    assert learned_efficiency([{"pairs": [_pair(0.3, slow=True)]}, {"pairs": [_pair(0.9, status="error")]}]) is None
    out = expected_section({"ring": {"nominal": 400.0, "now": 200.0}}, None)
    assert out["calibrated"] is False and "nominal" in out["efficiency_source"]
    assert "expected" not in out["by_algorithm"]["ring"] and "ring" in out["by_algorithm"]["ring"]["assumes"]


def test_between_measured_sizes_the_efficiency_is_interpolated_on_log_size_and_clamped_outside():
    eff = given_efficiency("1M=0.5,256M=0.9")
    assert eff.at(16 * MIB) == pytest.approx(0.5 + 0.4 * 4 / 8)
    assert eff.at(1024) == 0.5 and eff.at(1 << 40) == 0.9 and eff.at(None) == 0.9
    assert given_efficiency("0.85").by_size == {0: 0.85}
    assert parse_size("16MiB") == 16 * MIB and parse_size("4096") == 4096


@pytest.mark.parametrize(("spec", "message"), [("1.7", r"in \(0, 1\]"), ("1.01", "never carries more than its links"),
                                             ("fast", "not a number"), ("3X=0.5", "item 1"),
                                               ("", "empty")])
def test_a_bad_efficiency_names_the_option_and_the_item(spec, message):
    with pytest.raises(ConfigError, match=message):
        given_efficiency(spec)


def test_a_figure_bound_by_a_measured_link_is_not_discounted_twice():
    eff = given_efficiency("1M=0.45,256M=0.9")
    out = expected_section({"ring": {"nominal": 400.0, "now": 100.0}}, eff, measured={"ring": ["now"]})
    ring = out["by_algorithm"]["ring"]
    assert ring["expected"] == {"nominal": 360.0, "now": 100.0}
    small = next(s for s in ring["by_size"] if s["size_bytes"] == MIB)
    assert small["nominal"] == pytest.approx(180.0) and small["now"] == pytest.approx(50.0)


def test_sharp_is_only_figured_when_declared_and_is_bound_by_the_host_links():
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    slow_host = Finding("F001", "link", "slow", "degraded_bandwidth", "error", 0.9, [slow_pairs(0.5)],
                        [("leaf01", 1), ("node0001", 1)], ["leaf01", "node0001"])
    m = ImpactModel(f, [slow_host])
    assert sharp_busbw(m, state="nominal") == pytest.approx(400.0 * 2 * 3 / 4)
    assert sharp_busbw(m) == pytest.approx(200.0 * 2 * 3 / 4)
    plain = impact_section(f, [slow_host], [], efficiency=given_efficiency("0.8"))
    declared = impact_section(f, [slow_host], [], efficiency=given_efficiency("0.8"), sharp=True)
    assert "sharp" not in plain.expected_busbw.by_algorithm
    sharp = declared.expected_busbw.by_algorithm["sharp"]
    assert "SHARP" in sharp.assumes and sharp.recommended == pytest.approx(400.0 * 2 * 2 / 3)
    json.dumps(declared.as_dict(), allow_nan=False)


def test_the_sweep_learns_the_efficiency_from_its_own_healthy_tests():
    from fabricdoc.sweep import SweepConfig, run_sweep

    report = run_sweep(SweepConfig(fabric="demo"))
    expected = report.impact.expected_busbw
    assert expected.calibrated and "healthy tests in this sweep" in expected.efficiency_source
    ok = [p.ratio for p in report.pairs if p.status == "ok" and not p.slow]
    ring = expected.by_algorithm["ring"]
    assert min(ok) <= ring.efficiency <= max(ok)
    assert ring.expected.nominal == pytest.approx(ring.nominal * ring.efficiency, rel=1e-3)
    assert all(p.size_bytes for p in report.pairs)


def test_the_impact_command_refuses_a_bad_efficiency_in_one_line(tmp_path):
    from fabricdoc.sweep import SweepConfig, run_sweep

    path = tmp_path / "r.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    bad = subprocess.run([sys.executable, "-m", "fabricdoc", "impact", str(path), "--efficiency", "2"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--efficiency" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "fabricdoc", "impact", str(path), "--efficiency", "0.8",
                           "--sharp", "--json"], capture_output=True, text=True, timeout=120)
    assert good.returncode == 1, good.stderr  # the demo report has faults: its verdict's code
    section = json.loads(good.stdout)
    assert section["expected_busbw"]["by_algorithm"]["ring"]["efficiency"] == 0.8
    assert "sharp" in section["expected_busbw"]["by_algorithm"]


def test_with_a_history_store_the_efficiency_is_learned_from_this_and_the_earlier_sweeps(tmp_path):
    from fabricdoc.report.history import History
    from fabricdoc.sweep import SweepConfig, run_sweep

    db = tmp_path / "history.sqlite"
    first = run_sweep(SweepConfig(fabric="demo", history=str(db), seed=1))
    second = run_sweep(SweepConfig(fabric="demo", history=str(db), seed=2))
    alone = sum(e.tests for e in first.impact.expected_busbw.efficiency_by_size)
    both = second.impact.expected_busbw
    assert "this sweep and 1 earlier in the history store" in both.efficiency_source
    healthy = [p for r in (first, second) for p in r.pairs if p.status == "ok" and not p.slow]
    assert len(healthy) >= sum(e.tests for e in both.efficiency_by_size) > alone
    with History(db, create=False) as store:
        pools = store.test_pools(str(first.fabric["name"]))
    assert [len(p["pairs"]) for p in pools] == [len(second.pairs), len(first.pairs)]  # newest first
