"""The gate where Slurm runs it: examples/slurm/prolog.sh as a node Prolog and prolog_slurmctld.sh as
PrologSlurmctld, under a real slurmctld and slurmd, with real jobs and healthy, faulty, missing and stale reports."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers.reports import SLURM_NODES, make_report
from tests.helpers.slurm import SlurmCluster, missing_slurm, start_cluster
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.slurm

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "slurm"


def _fabricdoc_command() -> str:
    """The console script pip installed beside this Python (Slurm runs prologs without PATH)."""
    script = Path(sys.executable).parent / "fabricdoc"
    if not script.exists():
        pytest.skip(f"no fabricdoc console script at {script}")
    return str(script)


@pytest.fixture(scope="module", params=["prolog", "prolog_slurmctld"])
def cluster(request, tmp_path_factory) -> Iterator[tuple[str, SlurmCluster, Path]]:
    """A Slurm whose Prolog (or PrologSlurmctld) is the example script, reading a report we rewrite."""
    why = missing_slurm()
    if why:
        pytest.skip(why)
    kind = request.param
    etc = tmp_path_factory.mktemp(f"fabricdoc-{kind}")
    shutil.copy(EXAMPLES / f"{kind}.sh", etc / f"{kind}.sh")
    report = etc / "latest.json"
    names = etc / "names.txt"
    names.write_text("".join(f"node{n[-4:]} {n}\n" for n in SLURM_NODES))
    (etc / "fabricdoc-slurm.env").write_text(
        f"FABRICDOC={_fabricdoc_command()}\nFABRICDOC_REPORT={report}\nFABRICDOC_POLICY=\nFABRICDOC_MAP={names}\n")
    conf = f"Prolog={etc / 'prolog.sh'}\nPrologFlags=Alloc\n" if kind == "prolog" else \
        f"PrologSlurmctld={etc / 'prolog_slurmctld.sh'}\n"
    with start_cluster(conf) as c:
        yield kind, c, report


@pytest.fixture
def slurm_job(cluster):
    """Submit a 2-node job and wait for its outcome; every job and drain is undone after the test."""
    kind, c, report = cluster
    submitted: list[str] = []

    def run(nodes: str = "fdsl-node[0001-0002]") -> tuple[str, dict[str, str]]:
        out = c.run("sbatch", "-N", "2", "-w", nodes, "-o", "/dev/null", "--wrap", "true").stdout
        jid = out.split()[-1]
        submitted.append(jid)

        def outcome() -> str | None:
            fields = dict(f.split("=", 1) for f in c.run("scontrol", "show", "job", "-o", jid).stdout.split()
                          if "=" in f)
            state, why = fields.get("JobState", ""), fields.get("Reason", "")
            if state in ("COMPLETED", "FAILED", "CANCELLED"):
                return state
            if state == "PENDING" and why not in ("None", "Priority", "Resources"):
                return f"PENDING {why}"  # requeued or held: it did not start
            return None

        wait_for(lambda: outcome() is not None, 60, f"job {jid} to finish or be held back", 0.3)
        return outcome() or "", c.reasons()

    yield kind, c, report, run
    for jid in submitted:
        c.run("scancel", jid, check=False)
    for node in c.reasons():
        c.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
    wait_for(lambda: not c.reasons() and c.all_idle(), 30, "nodes idle again", 0.3)


def _write(report: Path, bad=(), age=timedelta(0)) -> None:
    rep = make_report(bad_hosts=list(bad))
    rep.generated_at = (datetime.now(UTC) - age).isoformat(timespec="seconds")
    rep.save(report)


def test_a_healthy_report_lets_the_job_run_and_drains_nothing(slurm_job):
    _kind, _c, report, run = slurm_job
    _write(report)
    state, reasons = run()
    assert state == "COMPLETED" and reasons == {}


def test_a_faulty_host_holds_the_job_and_only_a_node_prolog_drains_and_only_that_node(slurm_job):
    kind, _c, report, run = slurm_job
    _write(report, bad=["node0002"])
    state, reasons = run()
    assert state.startswith("PENDING")  # the job did not run on a faulty host
    if kind == "prolog":
        # A failing node Prolog drains that node; the healthy one's Prolog passed and stays in service.
        assert reasons == {"fdsl-node0002": "Prolog error"}
    else:
        assert reasons == {}  # PrologSlurmctld requeues the job and drains nothing


def test_a_missing_or_stale_report_never_drains_a_node(slurm_job):
    kind, _c, report, run = slurm_job
    report.unlink(missing_ok=True)
    # The node Prolog cannot check and passes (its trouble is not the node's); PrologSlurmctld holds the job.
    expected = "COMPLETED" if kind == "prolog" else "PENDING"
    state, reasons = run()
    assert reasons == {} and state.startswith(expected)
    _write(report, age=timedelta(days=31))  # a month old: says nothing about the fabric now
    state, reasons = run("fdsl-node[0003-0004]")
    assert reasons == {} and state.startswith(expected)


def test_the_prolog_scripts_are_valid_bash():
    for script in EXAMPLES.glob("*.sh"):
        subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
