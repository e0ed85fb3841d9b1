"""drain and resume against a real slurmctld with fake slurmd nodes, read back with sinfo -R."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.report.report import Report
from tests.helpers.reports import HOST_RULE, make_report
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.slurm


def _args(slurm, *extra: str) -> list[str]:
    return ["--host-rule", *HOST_RULE, "--slurm-conf", str(slurm.conf), *extra]


def test_report_with_two_bad_nodes_drains_exactly_those_two_with_the_reason(slurm, report_file, capsys):
    rep = report_file(bad_hosts=["node0001", "node0003"])
    assert main(["drain", str(rep), *_args(slurm, "--apply")]) == 1
    reasons = slurm.reasons()
    assert set(reasons) == {"fdsl-node0001", "fdsl-node0003"}
    tags = {f.node_ids[0]: f.tag for f in Report.load(rep).findings}
    for node in ("node0001", "node0003"):
        assert reasons[f"fdsl-{node}"] == f"fd:down {tags[node]} nic down"
    states = slurm.states()
    assert states["fdsl-node0002"] == "idle" and states["fdsl-node0004"] == "idle"
    assert {states["fdsl-node0001"], states["fdsl-node0003"]} == {"drained"}
    out = capsys.readouterr().out
    assert f'scontrol update nodename=fdsl-node0001 state=drain reason="fd:down {tags["node0001"]} nic down"  # ok' in out


def test_without_apply_drain_prints_commands_and_changes_nothing(slurm, report_file, capsys):
    rep = report_file(bad_hosts=["node0002"])
    assert main(["drain", str(rep), *_args(slurm)]) == 1
    tag = Report.load(rep).findings[0].tag
    assert capsys.readouterr().out.strip() == (
        f'scontrol update nodename=fdsl-node0002 state=drain reason="fd:down {tag} nic down"'
    )
    assert slurm.reasons() == {}


def test_later_clean_report_resumes_the_drained_nodes(slurm, report_file):
    bad = report_file("bad.json", bad_hosts=["node0001", "node0003"])
    clean = report_file("clean.json")
    assert main(["drain", str(bad), *_args(slurm, "--apply")]) == 1
    assert set(slurm.reasons()) == {"fdsl-node0001", "fdsl-node0003"}
    assert main(["resume", str(clean), *_args(slurm, "--apply")]) == 0
    assert slurm.reasons() == {}
    # Slurm marks a resumed node "idle*" (not responding) until its next ping answers.
    wait_for(slurm.all_idle, 30, "resumed nodes to be idle")


def test_resume_keeps_a_node_still_faulty_and_leaves_an_admin_drain_alone(slurm, report_file, capsys):
    bad = report_file("bad.json", bad_hosts=["node0001", "node0003"])
    later = report_file("later.json", bad_hosts=["node0003"])
    assert main(["drain", str(bad), *_args(slurm, "--apply")]) == 1
    slurm.run("scontrol", "update", "nodename=fdsl-node0004", "state=drain", "reason=disk swap (admin)")
    capsys.readouterr()
    assert main(["resume", str(later), *_args(slurm, "--apply", "--json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [a["node"] for a in doc["actions"]] == ["fdsl-node0001"]
    assert doc["actions"][0]["applied"] is True
    reasons = slurm.reasons()
    assert set(reasons) == {"fdsl-node0003", "fdsl-node0004"}
    assert reasons["fdsl-node0004"] == "disk swap (admin)"


def test_resume_since_an_earlier_report_uses_its_drain_list(slurm, report_file):
    bad = report_file("bad.json", bad_hosts=["node0002"])
    clean = report_file("clean.json")
    assert main(["drain", str(bad), *_args(slurm, "--apply")]) == 1
    assert main(["resume", str(clean), "--since", str(bad), *_args(slurm, "--apply")]) == 0
    assert slurm.reasons() == {}


def test_node_name_with_shell_metacharacters_is_refused_and_never_executed(slurm, tmp_path: Path, capsys):
    marker = tmp_path / "pwned"
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    evil = f"node0002;touch {marker};$(touch {marker})`touch {marker}`"
    fabric.nodes["node0002"].attrs["host"] = evil
    path = tmp_path / "evil.json"
    make_report(bad_hosts=["node0001", "node0002"], fabric=fabric).save(path)
    assert main(["drain", str(path), *_args(slurm, "--apply")]) == 2
    captured = capsys.readouterr()
    assert "refused" in captured.err and "refusing node name" in captured.err
    assert "fdsl-node0001" in captured.out and "touch" not in captured.out
    assert not marker.exists()
    # The good node was drained; the refused one reached neither a shell nor Slurm.
    assert set(slurm.reasons()) == {"fdsl-node0001"}


def test_a_node_slurm_does_not_know_is_refused_and_the_rest_still_drain(slurm, report_file, capsys):
    rep = report_file(bad_hosts=["node0001", "node0002"])
    # Map node0002 to a name Slurm does not know: refused before any scontrol, node0001 still drains.
    mapfile = rep.parent / "map.txt"
    mapfile.write_text("# fabric  slurm\nnode0002 fdsl-nosuch\n")
    assert main(["drain", str(rep), "--map", str(mapfile), *_args(slurm, "--apply")]) == 2
    captured = capsys.readouterr()
    assert "refused: Slurm has no node 'fdsl-nosuch'" in captured.err
    assert "fdsl-nosuch" not in captured.out
    assert set(slurm.reasons()) == {"fdsl-node0001"}


def test_an_scontrol_update_that_fails_is_reported_per_node_and_exits_2(slurm, report_file, tmp_path, capsys):
    # An scontrol that reads like the real one but refuses updates, as one without operator rights does.
    refusing = tmp_path / "scontrol"
    refusing.write_text('#!/bin/bash\n[ "$1" = update ] && { echo "slurm_update error: Access/permission denied" >&2; '
                        'exit 1; }\nexec scontrol "$@"\n')
    refusing.chmod(0o755)
    rep = report_file(bad_hosts=["node0001"])
    assert main(["drain", str(rep), *_args(slurm, "--apply", "--scontrol", str(refusing))]) == 2
    assert "# FAILED (slurm_update error: Access/permission denied)" in capsys.readouterr().out
    assert slurm.reasons() == {}


def test_a_real_demo_sweep_report_drains_its_hosts_in_slurm(slurm, tmp_path, capsys):
    rep_path = tmp_path / "sweep.json"
    assert main(["sweep", "--fabric", "demo", "-o", str(rep_path), "--quiet"]) == 1

    drain = Report.load(rep_path).drain
    assert 1 <= len(drain) <= len(slurm.nodes)
    # The demo fabric names hosts node00NN; map its drained hosts onto this test's Slurm nodes.
    mapping = {d.node: slurm.nodes[i] for i, d in enumerate(drain)}
    mapfile = tmp_path / "map.yaml"
    mapfile.write_text("names:\n" + "".join(f"  {k}: {v}\n" for k, v in mapping.items()))
    capsys.readouterr()
    assert main(["drain", str(rep_path), "--map", str(mapfile), "--slurm-conf", str(slurm.conf), "--apply"]) == 1
    reasons = slurm.reasons()
    assert set(reasons) == set(mapping.values())
    assert all(r.startswith("fd:") and len(r.split(" ", 2)[1]) == 6 for r in reasons.values())


def test_an_admins_drain_is_never_overwritten_nor_resumed(slurm, report_file, capsys):
    """The RMA case: an admin drained node0001 by hand; a sweep finds it and node0002 faulty, a later clean
    sweep comes. The admin's reason survives both and the node stays drained; node0002 goes and comes back."""
    rma = "RMA ticket 4711 - bad DIMM"
    slurm.run("scontrol", "update", "nodename=fdsl-node0001", "state=drain", f"reason={rma}")
    bad = report_file("bad.json", bad_hosts=["node0001", "node0002"])
    assert main(["drain", str(bad), *_args(slurm, "--apply")]) == 1
    err = capsys.readouterr().err
    assert f"not drained fdsl-node0001: drained by someone else (reason: {rma}): left alone" in err
    reasons = slurm.reasons()
    assert reasons["fdsl-node0001"] == rma and reasons["fdsl-node0002"].startswith("fd:down ")
    clean = report_file("clean.json")
    assert main(["resume", str(clean), *_args(slurm, "--apply")]) == 0
    assert slurm.reasons() == {"fdsl-node0001": rma}
    assert slurm.states()["fdsl-node0001"] == "drained"
    # Asked by name (--since the bad report), resume still leaves the admin's node alone.
    assert main(["resume", str(clean), "--since", str(bad), *_args(slurm, "--apply")]) == 0
    assert slurm.reasons() == {"fdsl-node0001": rma}


def test_a_node_in_a_maintenance_reservation_or_down_is_left_alone(slurm, report_file, capsys):
    slurm.run("scontrol", "create", "reservation", "reservationname=fd_maint", "users=root", "starttime=now",
              "duration=30", "nodes=fdsl-node0003", "flags=maint")
    try:
        slurm.run("scontrol", "update", "nodename=fdsl-node0004", "state=down", "reason=admin | cable swap")
        rep = report_file(bad_hosts=["node0003", "node0004"])
        assert main(["drain", str(rep), *_args(slurm, "--apply")]) == 0  # nothing of its own to do
        err = capsys.readouterr().err
        assert "in reservation fd_maint (MAINT,SPEC_NODES): left alone" in err
        assert "down by someone else (reason: admin | cable swap): left alone" in err
        assert slurm.reasons() == {"fdsl-node0004": "admin | cable swap"}
    finally:
        slurm.run("scontrol", "delete", "reservationname=fd_maint", check=False)


def test_comment_only_mode_annotates_without_draining_and_clears_its_own_comments(slurm, report_file):
    def comments() -> dict[str, str]:
        out = slurm.run("sinfo", "-N", "-h", "-O", "NodeList:|,Comment:").stdout
        return {n.strip(): c.strip() for n, c in (line.split("|", 1) for line in out.splitlines())}

    slurm.run("scontrol", "update", "nodename=fdsl-node0004", "comment=GPU swap booked 5/12")
    try:
        bad = report_file("bad.json", bad_hosts=["node0001"])
        assert main(["drain", str(bad), *_args(slurm, "--apply", "--comment-only")]) == 1
        assert comments()["fdsl-node0001"].startswith("fd:down ")
        assert slurm.reasons() == {} and slurm.all_idle()  # annotated, still in service
        clean = report_file("clean.json")
        assert main(["resume", str(clean), *_args(slurm, "--apply", "--comment-only")]) == 0
        now = comments()
        assert now["fdsl-node0001"] == "(null)" and now["fdsl-node0004"] == "GPU swap booked 5/12"
    finally:
        for node in ("fdsl-node0001", "fdsl-node0004"):
            slurm.run("scontrol", "update", f"nodename={node}", "comment=", check=False)


def test_a_stale_report_drains_nothing(slurm, tmp_path, capsys):
    from datetime import UTC, datetime, timedelta

    from tests.helpers.reports import make_report

    rep = make_report(bad_hosts=["node0001"])
    rep.generated_at = (datetime.now(UTC) - timedelta(days=30)).isoformat(timespec="seconds")
    path = tmp_path / "old.json"
    rep.save(path)
    assert main(["drain", str(path), *_args(slurm, "--apply")]) == 2
    assert "h old (limit 24 h)" in capsys.readouterr().err
    assert slurm.reasons() == {}


def test_a_capped_drain_list_drains_only_what_the_policy_let_through(slurm, tmp_path, capsys):
    """Three hosts are faulty and the policy drains at most one a sweep: Slurm sees exactly one drain, the
    other two stay in service and the report says they were held back and why."""
    from fabricdoc.report.drain_policy import DrainPolicy
    from fabricdoc.sweep import hold_drains

    rep = make_report(bad_hosts=["node0001", "node0002", "node0003"])
    hold_drains(rep, DrainPolicy(max_drain=1), None)
    path = tmp_path / "capped.json"
    rep.save(path)
    assert main(["drain", str(path), *_args(slurm, "--apply")]) == 1
    (drained,) = [d.node for d in rep.drain]
    held = sorted(h.node for h in rep.drain_held)
    assert len(held) == 2 and all("cap" in h.why for h in rep.drain_held), rep.drain_held
    assert set(slurm.reasons()) == {f"fdsl-{drained}"}
    states = slurm.states()
    assert all(states[f"fdsl-{n}"] == "idle" for n in held), states
