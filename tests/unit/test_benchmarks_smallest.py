"""Every benchmark runs to completion at its smallest size (issue 16 point 7): a subprocess,
exit 0, its figures printed. Speed is not asserted here; the figures live in benchmarks/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(name: str, *args: str, timeout: float = 300) -> str:
    """Run ``benchmarks/<name>`` with ``args``; its stdout (a failure shows its stderr)."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_bench_tui_runs_at_its_smallest_size_with_the_model_and_what_if():
    out = run_bench("bench_tui.py", "--k", "4", "--pages", "1")
    for figure in ("open: start -> main screen up", "links: first show", "impact: first show",
                   "impact model ready", "what-if: d -> new prediction", "memory with the impact model",
                   "what-if asked at once: answer after main screen", "memory of the impact model's process"):
        assert figure in out


def test_bench_report_runs_at_its_smallest_size():
    out = run_bench("bench_report.py", "--k", "4", "--repeats", "1")
    assert "report file:" in out and "load: Report.load" in out


def test_bench_startup_runs_at_its_smallest_size():
    out = run_bench("bench_startup.py", "1")
    assert "fabricdoc --help" in out and "fabricdoc probe --help" in out and "heavy modules" in out


def test_bench_scale_runs_at_its_smallest_sizes_and_prints_stages_and_growth():
    out = run_bench("bench_scale.py", "--sizes", "small", "--faults", "2")
    for figure in ("plan", "measure", "localize", "report", "peak MiB", "exp", "rail-optimized 128 x 8 rails",
                   "3-level fat-tree k=12"):
        assert figure in out
    assert "FAILED" not in out


def test_bench_plan_runs_at_its_smallest_size():
    out = run_bench("bench_plan.py", "--sizes", "small")
    assert "rail-optimized, 32 hosts x 8 rails" in out and "budget" in out and "oneway" in out


def test_bench_localize_runs_at_its_smallest_size():
    out = run_bench("bench_localize.py", "--sizes", "small")
    assert "localize" in out and "max RSS" in out


def test_bench_accuracy_runs_at_its_smallest_size_and_healthy_fabrics_stay_clean(tmp_path):
    import json

    out = run_bench("bench_accuracy.py", "--reps", "1", "--json", str(tmp_path / "acc.json"))
    assert "per fault kind" in out and "loc P" in out and "cls R" in out
    figures = json.loads((tmp_path / "acc.json").read_text())
    assert figures["healthy"]["fabrics"] > 0 and figures["healthy"]["findings"] == 0
    assert figures["crashes"] == []


def test_bench_groups_runs_at_its_smallest_size_and_healthy_fabrics_stay_clean():
    out = run_bench("bench_groups.py", "--sizes", "small", "--seeds", "2")
    for figure in ("tests/bound", "CRE tests", "recall", "precision", "pair rounds", "with groups"):
        assert figure in out
    healthy = [line for line in out.splitlines() if " healthy " in line]
    assert healthy and all(line.rstrip().endswith("false positives: 0") for line in healthy)


def test_bench_groups_shapes_run_with_the_fan_screening_and_healthy_fabrics_stay_clean():
    out = run_bench("bench_groups.py", "--shapes-only", "--group-test", "fan", "--seeds", "1")
    assert "with groups (fan)" in out and "all shapes" in out
    healthy = [line for line in out.splitlines() if " healthy " in line]
    assert len(healthy) == 6 and all(line.rstrip().endswith("false positives: 0") for line in healthy)


def test_bench_groups_mixed_faults_run_and_print_recall_precision_and_silent_parts():
    out = run_bench("bench_groups.py", "--mixed-only", "--seeds", "1")
    assert "5. two faults at once" in out
    totals = {line.split()[2]: line.split()[3:] for line in out.splitlines() if line.strip().startswith("all shapes")}
    assert set(totals) == {"two_collapse", "collapse+slow", "incast_switch", "collapse_above_4", "all"}
    assert all(0.0 <= float(v[0]) <= 1.0 for v in totals.values())


def test_bench_analyze_noise_runs_quick_on_the_64_hca_capture_and_a_rail_fabric_and_prints_its_tables(tmp_path):
    import json

    out = run_bench("bench_analyze_noise.py", "--quick", "--json", str(tmp_path / "noise.json"))
    for figure in ("64 HCAs, 12 switches, 128 cables", "tests: shifts; noise level: jitter 0.01",
                   "tests: sweep; noise level: jitter 0.04", "precision", "recall hard", "recall gray",
                   "outliers blamed", "healthy verdicts p/d/f/i", "slow tests/healthy", "runtime",
                   "total, tests shifts: precision", "contradiction (NDR-rate logs on the capture's own 4xQDR): verdict",
                   "fabric rail: rail_optimized(units=2, hosts_per_unit=8, rails=4, spines=4), 64 HCA ports",
                   "fabric rail; tests: sweep; noise level: jitter 0.01", "total, fabric rail, tests shifts: precision"):
        assert figure in out
    assert [line.split()[:2] for line in out.splitlines() if line.strip().startswith(("0.92", "0.78"))] == [
        ["0.92", "HDR"], ["0.78", "HDR"]] * 8
    figures = json.loads((tmp_path / "noise.json").read_text())
    assert len(figures["cases"]) == 32 and "verdict" in figures["contradiction"]
    assert [c["fabric"] for c in figures["cases"]] == ["capture"] * 16 + ["rail"] * 16


def test_bench_job_errors_runs_at_its_smallest_size():
    out = run_bench("bench_job_errors.py", "--cases", "2")
    assert "named|pinned" in out and "healthy drained" in out and "verdicts:" in out
