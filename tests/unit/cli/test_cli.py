"""The CLI as a user runs it: exit codes, one-line errors, the demo sweep."""

import json
import subprocess
import sys

import pytest

from tests.helpers.paths import DATA as DATA_ROOT


def fabricdoc(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fabricdoc", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_demo_sweep_prints_its_findings_and_exits_1(tmp_path):
    out = tmp_path / "report.json"
    r = fabricdoc("sweep", "--fabric", "demo", "-o", str(out), "--quiet")
    assert r.returncode == 1, r.stderr
    assert "verdict: FAIL" in r.stdout
    data = json.loads(out.read_text())
    faults = {(f["fault"], tuple(map(tuple, f["endpoints"]))) for f in data["findings"]}
    assert ("symbol_errors", (("leaf03", 6), ("spine02", 3))) in faults
    assert ("width_degraded", (("leaf06", 8), ("spine04", 6))) in faults
    assert ("degraded_bandwidth", (("leaf02", 5), ("spine01", 2))) in faults
    assert ("flapping", (("leaf07", 3), ("node0027", 1))) in faults
    # Exactly the four injected faults are blamed; anything else is a suspect (``info``) at most.
    assert len([f for f in data["findings"] if f["severity"] != "info"]) == 4
    assert [d["node"] for d in data["drain"]] == ["node0027"]
    assert data["impact"]["allreduce_busbw_gbps"]["now"] < data["impact"]["allreduce_busbw_gbps"]["nominal"]
    assert fabricdoc("schema", "--validate", str(out)).returncode == 0


def test_a_healthy_fabric_exits_0(tmp_path):
    fabric = tmp_path / "f.yaml"
    fabric.write_text("name: ok\ngenerator: fat_tree_2\nparams: {leaves: 2, spines: 2, hosts_per_leaf: 2}\n")
    r = fabricdoc("sweep", "--fabric", f"sim:{fabric}", "--quiet", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "pass"


def test_faults_file_and_seed_drive_the_simulation(tmp_path):
    fabric = tmp_path / "f.yaml"
    fabric.write_text("name: ok\ngenerator: fat_tree_2\nparams: {leaves: 4, spines: 2, hosts_per_leaf: 2}\n")
    faults = tmp_path / "faults.yaml"
    faults.write_text('faults:\n  - {kind: down, port: "spine02[3]"}\n')
    r = fabricdoc("sweep", "--fabric", f"sim:{fabric}", "--faults", str(faults), "--seed", "5", "--quiet", "--json")
    assert r.returncode == 1
    (finding,) = json.loads(r.stdout)["findings"]
    assert finding["fault"] == "down" and ["spine02", 3] in finding["endpoints"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "--fabric", "sim:/nonexistent/f.yaml"], "/nonexistent/f.yaml"),
        (["sweep", "--fabric", "nosuch"], "no bundled fabric 'nosuch'"),
        (["schema", "--validate", "/nonexistent.json"], "/nonexistent.json"),
        (["analyze", "--topology", "demo"], "nothing to analyze"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(args, needle):
    r = fabricdoc(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_bad_fault_file_names_file_and_line(tmp_path):
    faults = tmp_path / "faults.yaml"
    faults.write_text('faults:\n  - {kind: dead_switch, switch: spine99}\n')
    r = fabricdoc("sweep", "--fabric", "demo", "--faults", str(faults), "--quiet")
    assert r.returncode == 2
    assert f"{faults}:2: unknown node 'spine99'" in r.stderr


def test_schema_prints_a_json_schema():
    r = fabricdoc("schema")
    assert r.returncode == 0
    assert json.loads(r.stdout)["$id"] == "fabricdoc.report/v1"


def test_analyze_reads_saved_records(tmp_path):
    from fabricdoc.sources.fabrics import load_fabric
    from fabricdoc.sources.records import records_to_json
    from fabricdoc.sources.sim.simulator import Simulator

    fabric, faults = load_fabric("demo")
    obs = Simulator(fabric, faults, seed=0).run().observations
    path = tmp_path / "records.json"
    path.write_text(records_to_json([*obs.before, *obs.after, *obs.states, *obs.events]))
    r = fabricdoc("analyze", "--topology", "demo", "--records", str(path), "--json")
    assert r.returncode == 1, r.stderr
    faults_found = {f["fault"] for f in json.loads(r.stdout)["findings"]}
    assert faults_found == {"symbol_errors", "width_degraded", "flapping"}  # the slow link needs bandwidth tests


def test_a_truncated_ibnetdiscover_file_is_one_line_with_file_and_line():

    path = DATA_ROOT / "ib" / "ibnetdiscover" / "truncated" / "stdout.txt"
    r = fabricdoc("sweep", "--fabric", f"sim:{path}", "--quiet")
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert f"{path}:" in line and "Traceback" not in r.stderr
    assert line.split(f"{path}:", 1)[1].split(":", 1)[0].isdigit()


def test_a_saved_ibnetdiscover_output_sweeps_as_a_simulated_fabric():

    path = DATA_ROOT / "ib" / "ibnetdiscover" / "healthy" / "stdout.txt"
    r = fabricdoc("sweep", "--fabric", str(path), "--quiet", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["fabric"]["hosts"] == 16 and report["fabric"]["switches"] == 6
    assert report["tests"]["pairs_tested"] > 16


def test_quiet_prints_only_the_verdict_line_and_keeps_the_exit_code(capsys):
    from fabricdoc.cli.main import main

    assert main(["sweep", "--fabric", "demo", "-q"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["fabricdoc: demo (32 hosts, 12 switches, 64 links) -- verdict: FAIL"]
    assert "groups" not in err  # no progress bar either


def test_a_group_test_without_groups_is_refused_not_silently_ignored(capsys):
    from fabricdoc.cli.main import main

    assert main(["sweep", "--fabric", "demo", "--group-test", "fan", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--group-test fan" in err and "add --groups" in err
