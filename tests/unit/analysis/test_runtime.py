"""NCCL runtime signals as evidence: failing connections localize the cable, transports are host_config."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fabricdoc.probes.nccl.debug import parse_nccl_debug

from fabricdoc.analysis.localize import localize
from fabricdoc.analysis.runtime import observations_from_nccl_debug
from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import rail_optimized
from fabricdoc.fabric.identity import host_name
from fabricdoc.model.evidence import CandidatesEvidence, NcclLogEvidence
from fabricdoc.model.records import LinkKey
from fabricdoc.report.drain import drain_list
from fabricdoc.report.validation import validate_report
from fabricdoc.sources.fabrics import load_fabric
from fabricdoc.sources.infiniband import apply_routes_file, read_ibnetdiscover_file
from fabricdoc.sources.nccl_debug import read_nccl_debug
from fabricdoc.sources.sim.nccl_job import simulate_job

DATA = Path(__file__).parents[2] / "data" / "nccl-debug"
RING = DATA / "synthetic_demo_node0001_cable_from_snellius" / "job.log"
SNELLIUS = DATA / "real_odissei_snellius_h100_2node_netib_roce_mix" / "all_reduce_mpi.log"
ISSUE1814 = DATA / "real_nccl_issue1814_ibext_no_gdrdma_completion_errors" / "excerpt.log"
ISSUE952 = DATA / "real_nccl_issue952_net_socket_fallback" / "excerpt.log"


@pytest.fixture(scope="module")
def demo():
    return load_fabric("demo")[0]


def test_failed_connections_become_hung_pairs_and_working_ones_pass(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(RING)])
    hung = {frozenset((p.src.node, p.dst.node)) for p in obs.pairs if p.status == "hung"}
    ok = {frozenset((p.src.node, p.dst.node)) for p in obs.pairs if p.status == "ok"}
    assert hung == {frozenset(("node0001", "node0002")), frozenset(("node0001", "node0004"))}
    assert ok == {frozenset(("node0002", "node0003")), frozenset(("node0003", "node0004"))}
    assert all(p.test == "nccl-debug" for p in obs.pairs)


def test_errors_that_all_involve_one_cable_name_that_cable_with_the_log_lines(demo):
    findings = localize(demo, observations_from_nccl_debug(demo, [read_nccl_debug(RING)]))
    top = findings[0]
    assert top.node_ids and "node0001" in top.node_ids and top.fault == "hung"
    assert {n for f in findings for n in f.node_ids if f.kind in ("link", "nic", "port")} <= {"node0001", "leaf01"}
    lines = top.evidence_of(NcclLogEvidence)
    assert {e.line_no for e in lines} == {41, 46}
    assert all("transport retry counter exceeded" in e.reason for e in lines)
    assert not [f for f in findings if f.fault == "host_config"]  # every connection used GDRDMA


def test_a_job_on_gdrdma_everywhere_has_no_host_config_finding(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(SNELLIUS)])
    assert obs.transports and all(t.gdr for t in obs.transports)
    assert not [f for f in localize(demo, obs) if f.fault == "host_config"]


def test_socket_fallback_is_a_host_config_error_on_that_host_not_a_cable(demo):
    findings = localize(demo, observations_from_nccl_debug(demo, [read_nccl_debug(ISSUE952)]))
    f, warned = findings
    assert (f.kind, f.fault, f.name, str(f.severity)) == ("host", "host_config", "<cluster_name>", "error")
    (ev,) = f.evidence_of(NcclLogEvidence)
    assert "NET/Socket" in ev.reason and "via NET/Socket/0" in ev.line and ev.line_no == 4
    # Its 'NCCL WARN socketProgress: Connection closed by remote peer' line is said too, as what it is.
    assert (warned.kind, warned.fault, str(warned.severity)) == ("host", "nccl_error", "warning")
    assert "Connection closed by remote peer" in warned.evidence_of(NcclLogEvidence)[0].line


def test_ib_without_gdrdma_is_a_host_config_warning_and_unmapped_errors_are_said(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(ISSUE1814)])
    assert not [p for p in obs.pairs if p.status == "hung"]  # hosts not in this fabric: not guessed
    assert any(p.status == "warning" and "not mapped to NIC ports" in (p.error or "") for p in obs.probes)
    (f,) = [f for f in localize(demo, obs) if f.fault == "host_config"]
    assert (f.kind, f.name, str(f.severity)) == ("host", "hostname-test", "warning")
    assert "without GPUDirect RDMA" in f.evidence_of(NcclLogEvidence)[0].reason


def test_cli_names_the_cable_in_text_and_a_valid_json_report(capsys):
    rc = main(["analyze", "--fabric", "demo", "--nccl-debug", str(RING)])
    out = capsys.readouterr().out
    assert rc == 1 and "node0001 port 1" in out and "transport retry counter exceeded" in out
    rc = main(["analyze", "--fabric", "demo", "--nccl-debug", str(RING), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    assert rc == 1 and report["findings"][0]["node_ids"][0] == "node0001"
    assert "nccl_log" in {e["type"] for e in report["findings"][0]["evidence"]}


def test_cli_socket_fallback_is_a_host_config_finding_in_the_json_report(capsys):
    main(["analyze", "--fabric", "demo", "--nccl-debug", str(ISSUE952), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    assert any(f["fault"] == "host_config" and f["kind"] == "host" for f in report["findings"])


def test_cli_bad_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\xff\xfe")
    assert main(["analyze", "--fabric", "demo", "--nccl-debug", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad.log:1" in err and "\n" not in err and "Traceback" not in err


# -- connection tomography on simulated jobs (issue 27) ----------------------------------------------------

IB = Path(__file__).parents[2] / "data" / "ib"


@pytest.fixture(scope="module")
def capture():
    """The real 64-HCA fat-tree under ibsim + OpenSM, routed by its own LFT dump."""
    fabric = read_ibnetdiscover_file(IB / "ibnetdiscover" / "fat_tree_64" / "stdout.txt").fabric
    apply_routes_file(fabric, IB / "dump_fts" / "fat_tree_64" / "stdout.txt")
    return fabric


def _analyze(fabric, job):
    logs = [parse_nccl_debug(text, f"{h}.log") for h, text in job.logs.items()]
    findings = localize(fabric, observations_from_nccl_debug(fabric, logs))
    return findings, {d.node for d in drain_list(fabric, findings)}


def _crossing(fabric, job) -> dict[LinkKey, set[int]]:
    out: dict[LinkKey, set[int]] = {}
    for i, c in enumerate(job.connections):
        for k in set(fabric.path(c.src, c.dst)) | set(fabric.path(c.dst, c.src)):
            out.setdefault(k, set()).add(i)
    return out


def _ends(f) -> set[str]:
    return set(f.node_ids)


def test_a_connection_whose_acks_alone_cross_the_cable_implicates_it(capture):
    # Find a leaf-spine cable and a job where some failed connection's data path misses the cable
    # and only its acknowledgements' path (the reverse route) crosses it.
    hosts = sorted(host_name(capture, n.id) for n in capture.hosts())
    uplinks = sorted((k for k in capture.links if capture.nodes[k.a.node].kind == capture.nodes[k.b.node].kind
                      == "switch"), key=str)
    for k in uplinks:
        job = simulate_job(capture, hosts[::3], [k], report=1.0, seed=1)
        if any(k not in capture.path(c.src, c.dst) for c in job.failed):
            break
    else:
        pytest.fail("no cable whose failures include an acknowledgement-only crossing")
    crossing = _crossing(capture, job)
    failed = {i for i, c in enumerate(job.connections) if c.failed}
    assert crossing[k] == failed
    findings, drained = _analyze(capture, job)
    top = findings[0]
    assert str(top.severity) == "error" and _ends(top) == {k.a.node, k.b.node}
    assert not drained  # a fabric cable's fault drains no host
    assert not [f for f in findings if f.kind in ("nic", "host") and str(f.severity) in ("error", "critical")]


@pytest.mark.parametrize("seed", range(6))
def test_a_broken_leaf_spine_cable_is_named_whenever_the_connections_pin_it_down(capture, seed):
    rng = random.Random(seed)
    hosts = sorted(host_name(capture, n.id) for n in capture.hosts())
    uplinks = sorted((k for k in capture.links if capture.nodes[k.a.node].kind == capture.nodes[k.b.node].kind
                      == "switch"), key=str)
    while True:
        job_hosts = sorted(rng.sample(hosts, 16))
        k = rng.choice(uplinks)
        job = simulate_job(capture, job_hosts, [k], report=rng.uniform(0.6, 1.0), prefix=("", "iso", "tag")[seed % 3],
                           seed=seed)
        if job.failed:
            break
    findings, drained = _analyze(capture, job)
    assert not drained
    crossing = _crossing(capture, job)
    pinned = not any(c != k and s == crossing[k] for c, s in crossing.items())
    named = [f for f in findings if str(f.severity) in ("warning", "error", "critical")]
    assert named, "a job whose log holds completion errors is never pass"
    if pinned:
        assert _ends(named[0]) == {k.a.node, k.b.node} and str(named[0].severity) == "error"


def test_a_broken_host_cable_names_that_host_cable_and_drains_only_that_host(capture):
    hosts = sorted(host_name(capture, n.id) for n in capture.hosts())
    job_hosts = hosts[::4]
    bad = capture.node_links(next(n.id for n in capture.hosts() if host_name(capture, n.id) == job_hosts[3]))[0].key
    job = simulate_job(capture, job_hosts, [bad], report=0.8, seed=3)
    findings, drained = _analyze(capture, job)
    assert _ends(findings[0]) == {bad.a.node, bad.b.node} and str(findings[0].severity) == "error"
    assert drained == {job_hosts[3]}


def test_a_host_and_a_fabric_cable_that_explain_the_same_failures_name_the_fabric_cable_first(capture):
    # Only one host's connections cross the broken uplink (OpenSM routes its LID alone over it):
    # its own cable explains them equally well; the fabric cable is named, the host an alternative, no drain.
    hosts = sorted(host_name(capture, n.id) for n in capture.hosts())
    uplinks = sorted((k for k in capture.links if capture.nodes[k.a.node].kind == capture.nodes[k.b.node].kind
                      == "switch"), key=str)
    for seed in range(200):
        rng = random.Random(seed)
        job_hosts = sorted(rng.sample(hosts, 16))
        k = rng.choice(uplinks)
        job = simulate_job(capture, job_hosts, [k], report=1.0, seed=seed)
        crossing = _crossing(capture, job)
        twins = [c for c, s in crossing.items() if c != k and s == crossing.get(k) and job.failed
                 and "host" in (capture.nodes[c.a.node].kind, capture.nodes[c.b.node].kind)]
        if twins:
            break
    else:
        pytest.fail("no job where one host's cable ties the broken uplink")
    findings, drained = _analyze(capture, job)
    top = findings[0]
    assert _ends(top) == {k.a.node, k.b.node} and str(top.severity) == "warning"
    (cands,) = top.evidence_of(CandidatesEvidence)
    host_end = next(e for e in (twins[0].a, twins[0].b) if capture.nodes[e.node].kind == "host")
    assert any(capture.label(host_end.node) in c for c in cands.candidates)
    assert not drained


def test_a_rail_optimized_job_maps_each_gpu_to_its_rail_port():
    fabric = rail_optimized(2, 4, 8, 4)
    hosts = sorted({host_name(fabric, n.id) for n in fabric.hosts()})
    gpu = next(n.id for n in fabric.hosts() if host_name(fabric, n.id) == hosts[5])
    bad = next(lk.key for lk in fabric.node_links(gpu) if gpu in (lk.key.a.node, lk.key.b.node)
               and 2 in {p.port for p in (lk.key.a, lk.key.b) if p.node == gpu})  # its rail-1 port (port 2)
    job = simulate_job(fabric, hosts, [bad], gpus=8, report=1.0, seed=2)
    findings, drained = _analyze(fabric, job)
    assert _ends(findings[0]) == {bad.a.node, bad.b.node}
    ports = {p for e in (findings[0].endpoints or []) for p in [e]}
    assert (hosts[5], 2) in ports and drained == {hosts[5]}


@pytest.mark.parametrize("case", ["real_litllama_issue380_netib_port_error_no_device",
                                  "real_nccl_issue230_mpirun_timestamp_tag_output_catastrophic",
                                  "real_nccl_issue1919_qp_async_fatal_invalid_request",
                                  "real_nccl_issue1905_double_timestamp_qp_fatal_status4_vendor83",
                                  "real_nccl_issue928_ib_linklocal_peer_error4_vendor81",
                                  "real_nccl_issue1737_ibext_error5_vendor249_flushed",
                                  "real_nccl_issue1698_netib_hca_suffix_status12_then_5",
                                  "real_sichek_issue44_bracket_timestamp_netib_hca_status12",
                                  "real_nccl_issue1405_netib_completion_vendor_err_129"])
def test_a_log_with_any_ib_error_line_is_never_pass(case, capsys):
    (log,) = [p for p in (DATA / case).iterdir() if p.name != "README.md"]
    rc = main(["analyze", "--fabric", "demo", "--nccl-debug", str(log), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    assert report["verdict"] != "pass" and rc != 0
    lines = [e for f in report["findings"] for e in f["evidence"] if e["type"] == "nccl_log"]
    assert lines and all(e["source"] == str(log) for e in lines)


def test_a_catastrophic_device_error_is_the_nics_and_drains_its_host(demo, tmp_path):
    # The real line's form, on a demo host of one NIC port (the issue-230 host is not in the demo fabric).
    (src,) = [p for p in (DATA / "real_nccl_issue230_mpirun_timestamp_tag_output_catastrophic").iterdir()
              if p.name != "README.md"]
    text = src.read_text().replace("container-e275-1553839402050-12124-01-000057", "node0007")
    findings = localize(demo, observations_from_nccl_debug(demo, [parse_nccl_debug(text, "job.log")]))
    (f,) = findings
    assert (f.kind, f.fault, str(f.severity)) == ("nic", "nic_firmware", "error") and f.node_ids == ["node0007"]
    assert "catastrophic" in f.evidence_of(NcclLogEvidence)[0].reason
    assert {d.node for d in drain_list(demo, findings)} == {"node0007"}


def test_a_gid_names_the_port_by_its_port_guid_not_another_hcas_node_guid(capture):
    # In the real capture node0063's port GUID (0x...40) is node0064's node GUID: a GID is a port GUID.
    by_label = {capture.label(n.id): n for n in capture.hosts()}
    a, b = by_label["node0063"], by_label["node0010"]
    gid = {n.id: "fe80::" + ":".join(f"{(int(n.attrs['port_guids'][1], 16) >> s) & 0xFFFF:x}" for s in (48, 32, 16, 0))
           for n in (a, b)}
    line = (f"node0063:1:2 [0] transport/net_ib.cc:2451 NCCL WARN NET/IB : Got completion from peer 10.0.0.9<4> "
            f"with status=12 opcode=0 len=0 vendor err 129 (Send) localGid {gid[a.id]} remoteGids{gid[b.id]} hca mlx5_0")
    obs = observations_from_nccl_debug(capture, [parse_nccl_debug(line, "job.log")])
    (p,) = obs.pairs
    assert {p.src.node, p.dst.node} == {a.id, b.id} and p.status == "hung"


def test_cli_reads_a_jobs_logs_over_the_real_capture_and_says_connections_not_bandwidth_tests(capture, tmp_path,
                                                                                                capsys):
    hosts = sorted(host_name(capture, n.id) for n in capture.hosts())
    uplinks = sorted((k for k in capture.links if capture.nodes[k.a.node].kind == capture.nodes[k.b.node].kind
                      == "switch"), key=str)
    job = simulate_job(capture, hosts[::2], [uplinks[5]], report=1.0, prefix="iso", seed=3)
    files = []
    for h, text in job.logs.items():
        (tmp_path / f"{h}.log").write_text(text)
        files.append(str(tmp_path / f"{h}.log"))
    disc = tmp_path / "disc.txt"  # saved without its last line end, as an editor leaves it
    disc.write_text((IB / "ibnetdiscover" / "fat_tree_64" / "stdout.txt").read_text().rstrip("\n"))
    rc = main(["analyze", "--fabric", str(disc), "--routes", str(IB / "dump_fts" / "fat_tree_64" / "stdout.txt"),
               "--nccl-debug", *files])
    out = capsys.readouterr().out
    assert rc == 1
    failed = len({frozenset((c.src, c.dst)) for c in job.failed})
    assert f"job connections between NIC ports from NCCL's log ({failed} failed)" in out
    assert "bandwidth tests" not in out and "never finished" in out
    k = uplinks[5]
    lines = out.splitlines()
    first = lines[next(i for i, ln in enumerate(lines) if ln.startswith("ID ")) + 1]  # the worst finding's row
    assert f"{capture.label(k.a.node)}[{k.a.port}] -- {capture.label(k.b.node)}[{k.b.port}]" in first
    assert "drain: none" in out
