"""A job's NCCL Inspector figures: communicators slower than their peers name the cable they share."""

from __future__ import annotations

import json

from fabricdoc.cli.main import main
from fabricdoc.model.paths import directed
from fabricdoc.report.validation import validate_report
from fabricdoc.sources.fabrics import load_fabric

BAD = {("leaf02", 5), ("spine01", 2)}  # the demo's slow spine cable
HEALTHY_GBS, SLOW_GBS = 45.0, 18.0


def _crosses_bad(fabric, a, b) -> bool:
    pa, pb = fabric.host_ports(a)[0], fabric.host_ports(b)[0]
    for src, dst in ((pa, pb), (pb, pa)):
        for key, _ in directed(fabric.path(src, dst), src):
            if {(key.a.node, key.a.port), (key.b.node, key.b.port)} == BAD:
                return True
    return False


def _record(comm: str, rank: int, host: str, busbw: float) -> str:
    """One line as the plugin's inspector_json.cc writes it (compact, v4.0)."""
    return json.dumps({
        "header": {"id": comm, "rank": rank, "n_ranks": 2, "nnodes": 2},
        "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "", "rec_mechanism": "nccl_profiler_interface",
                     "dump_timestamp_us": 1749490229087081, "hostname": host, "pid": 4242},
        "coll_perf": {"coll": "AllReduce", "coll_sn": 7, "coll_msg_size_bytes": 1 << 28, "coll_exec_time_us": 11930,
                      "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": busbw, "coll_busbw_gbs": busbw},
    }, separators=(",", ":"))


def _job(tmp_path, with_missing_rank=False):
    """Two-host communicators between every host and the hosts 4, 8, 12 and 16 places on (128, across
    leaves and spines, as a job's data-parallel groups), as the job's Inspector dump."""
    fabric, _ = load_fabric("demo")
    hosts = [n.id for n in fabric.hosts()]
    dump = tmp_path / "nccl-inspector-4711"
    dump.mkdir()
    lines: dict[str, list[str]] = {h: [] for h in hosts}
    slow = []
    for i, (a, b) in enumerate((hosts[j], hosts[(j + k) % len(hosts)]) for k in (4, 8, 12, 16)
                               for j in range(len(hosts))):
        comm = f"0x{i + 1:014x}"
        bw = SLOW_GBS if _crosses_bad(fabric, a, b) else HEALTHY_GBS
        slow += [comm] if bw == SLOW_GBS else []
        lines[a].append(_record(comm, 0, a, bw))
        if not (with_missing_rank and i == 0):
            lines[b].append(_record(comm, 1, b, bw))
    for h, recs in lines.items():
        if recs:
            (dump / f"{h}-pid4242.log").write_text("\n".join(recs) + "\n")
    return dump, slow


def _analyze(capsys, dump):
    rc = main(["analyze", "--fabric", "demo", "--nccl-inspector", str(dump), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    return rc, report


def test_the_slow_communicators_name_the_cable_they_share_as_slow_not_load_only(tmp_path, capsys):
    dump, slow = _job(tmp_path)
    assert slow, "the demo's communicators should cross its slow spine cable"
    rc, report = _analyze(capsys, dump)
    named = [f for f in report["findings"] if f["kind"] == "link"]
    assert named and {tuple(e) for e in named[0]["endpoints"]} == BAD, report["findings"]
    assert named[0]["fault"] == "degraded_bandwidth"  # no healthy communicator crossed it at a lower load
    assert {g["phase"] for g in report["groups"]} == {"job"} and len(report["groups"]) == 128
    assert sum(1 for g in report["groups"] if g["ratio"] < 0.8) == len(slow)
    assert rc == 1


def test_a_communicator_with_a_rank_that_wrote_nothing_is_not_judged_and_keeps_the_verdict_from_pass(tmp_path, capsys):
    dump, _ = _job(tmp_path, with_missing_rank=True)
    rc, report = _analyze(capsys, dump)
    assert len(report["groups"]) == 127
    assert any("1 of 2 ranks wrote no Inspector record" in item["why"] for item in report["coverage"]["not_seen"])
