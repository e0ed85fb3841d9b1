"""Name mapping, name checks, reason sanitizing, command text and sinfo parsing (no Slurm needed)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.report.drain import DrainEntry, short_fault
from fabricdoc.scheduler.names import HostRule, NameMap, load_name_map
from fabricdoc.scheduler.slurm import (
    REASON_MAX_CHARS,
    SINFO_REASON_WIDTH,
    UnsafeNodeName,
    check_node_name,
    drain_argv,
    fault_tag,
    format_argv,
    is_ours,
    plan_drain,
    plan_resume,
    sanitize_reason,
)
from fabricdoc.sources.slurm import parse_sinfo_reasons
from tests.helpers.paths import DATA as DATA_ROOT
from tests.helpers.reports import make_report

DATA = DATA_ROOT / "sinfo" / "reasons"


@pytest.mark.parametrize(
    "name",
    ["node1;reboot", "$(id)", "`id`", "a b", "n[1-4]", "n1,n2", "-rf", "x|y", "a=b", "", "ALL", "n\n1", "ünï", "a'b", "a>b"],
)
def test_unsafe_node_names_are_refused(name):
    with pytest.raises(UnsafeNodeName, match="refusing node name"):
        check_node_name(name)


@pytest.mark.parametrize("name", ["node0001", "gpu-a100-017", "dgx01.cluster.local", "n_1"])
def test_plain_hostnames_pass(name):
    assert check_node_name(name) == name


@given(st.text(min_size=1, max_size=40))
def test_any_accepted_name_has_only_hostname_characters(name):
    try:
        check_node_name(name)
    except UnsafeNodeName:
        return
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    assert name[0].isalnum()


@given(st.text(max_size=400))
def test_reasons_are_prefixed_bounded_and_free_of_shell_characters(text):
    reason = sanitize_reason(text)
    assert reason.startswith("fd:")
    assert len(reason) <= REASON_MAX_CHARS
    assert not set(reason) & set("$`\\\"'!&|<>*?{}~\n\t")


@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=5), st.text(max_size=200))
def test_printed_command_splits_back_to_the_exact_argv(extra, text):
    argv = (*drain_argv("node0001", sanitize_reason(text)), *extra)
    assert shlex.split(format_argv(argv)) == list(argv)


def test_text_map_takes_the_last_column_so_fabric_names_may_have_spaces(tmp_path):
    p = tmp_path / "map.txt"
    p.write_text("# ib description   slurm\nnode0001 mlx5_0   gpu001\n\nnode0002 mlx5_0 gpu002  # trailing\n")
    m = load_name_map(p)
    assert m.node_name("node0001 mlx5_0") == "gpu001"
    assert m.node_name("node0002 mlx5_0") == "gpu002"
    assert m.node_name("other") == "other"


def test_text_map_line_with_one_column_names_file_and_line(tmp_path):
    p = tmp_path / "map.txt"
    p.write_text("a b\nlonely\n")
    with pytest.raises(ParseError, match=r"map.txt:2"):
        load_name_map(p)


def test_yaml_map_with_names_and_rules_map_first_then_first_matching_rule(tmp_path):
    p = tmp_path / "map.yaml"
    p.write_text(
        "names:\n  'node0001 mlx5_0': special01\n"
        "rules:\n  - {match: '(\\S+) mlx5_\\d+', replace: '\\1'}\n  - {match: 'node(\\d+)', replace: 'gpu\\1'}\n"
    )
    m = load_name_map(p)
    assert m.node_name("node0001 mlx5_0") == "special01"
    assert m.node_name("node0002 mlx5_1") == "node0002"
    assert m.node_name("node0003") == "gpu0003"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("names: {}\nrule: []\n", "unknown key 'rule'"),
        ("rules:\n  - {match: a, replace: b, flags: i}\n", r"rules\[0\]: unknown key 'flags'"),
        ("rules:\n  - {match: '(', replace: b}\n", "invalid regular expression"),
        ("names: [a, b]\n", "key 'names' must be a mapping"),
        ("- a\n", "expected a mapping"),
    ],
)
def test_bad_yaml_map_errors_name_the_file_and_key(tmp_path, text, needle):
    p = tmp_path / "m.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as exc:
        load_name_map(p)
    assert str(p) in str(exc.value)


def test_host_rule_with_bad_group_reference_is_a_config_error():
    with pytest.raises(ConfigError, match="bad replacement"):
        NameMap(rules=(HostRule.of("node(\\d+)", "\\2"),)).node_name("node1")


def test_plan_drain_refuses_unsafe_mapped_names_and_keeps_the_rest():
    rep = make_report(bad_hosts=["node0001"])
    rep.drain.append(DrainEntry(node="node0009;rm -rf /", reason="nic down", findings=["nic:node0009:down"]))
    actions, skipped = plan_drain(rep)
    assert [a.node for a in actions] == ["node0001"]
    tag = rep.findings[0].tag
    assert actions[0].argv == (
        "scontrol", "update", "nodename=node0001", "state=drain", f"reason=fd:down {tag} nic down",
    )
    assert len(skipped) == 1 and skipped[0].refused and "node0009;rm -rf /" in skipped[0].why


def test_resume_only_for_nodes_the_later_report_tested_and_no_longer_drains():
    later = make_report(bad_hosts=["node0002"])
    actions, skipped = plan_resume(later, ["node0001", "node0002", "node0099"])
    assert [a.node for a in actions] == ["node0001"]
    why = {s.node: s.why for s in skipped}
    assert "still faulty" in why["node0002"]
    assert "not tested" in why["node0099"]


def test_resume_without_topology_resumes_nothing():
    later = make_report()
    later.topology = None
    actions, skipped = plan_resume(later, ["node0001"])
    assert actions == [] and "no topology" in skipped[0].why


def test_real_sinfo_reasons_parse_with_a_separator_inside_an_admin_reason():
    got = parse_sinfo_reasons((DATA / "sinfo-R-N.txt").read_text(), "sinfo-R-N.txt")
    assert got["fdsl-node0004"] == ("drained", "admin | disk swap; ticket 42")
    assert got["fdsl-node0003"][1] == "fabricdoc: behind switch leaf02 (dead) [F002,F003]"


def test_garbled_sinfo_line_is_a_parse_error_naming_the_line():
    with pytest.raises(ParseError, match=r"sinfo:2"):
        parse_sinfo_reasons("n1|drained|x\ngarbage\n", "sinfo")


@pytest.mark.parametrize("fault", ["down", "dead", "flapping", "symbol_errors", "rcv_errors", "degraded_bandwidth",
                                   "width_degraded", "speed_degraded", "congestion", "pause_storm", "hung",
                                   "data_corruption", "gpu_error", "a_fault_name_nobody_shortened"])
def test_the_reason_tag_fits_sinfo_default_column_and_names_the_fault(fault):
    tag = fault_tag(fault, "3fa2c1")
    assert len(tag) <= SINFO_REASON_WIDTH and tag.startswith("fd:") and tag.endswith(" 3fa2c1")
    assert tag[3:-7] == short_fault(fault)


def test_the_same_fault_gets_the_same_reason_tag_in_the_next_sweep_whatever_its_place():
    one = make_report(bad_hosts=["node0003"])
    two = make_report(bad_hosts=["node0001", "node0003"])  # node0003's finding is second now
    (a,), _ = plan_drain(one)
    b = {x.node: x for x in plan_drain(two)[0]}["node0003"]
    assert two.findings.index(next(f for f in two.findings if f.node_ids == ["node0003"])) == 1
    assert a.reason[:SINFO_REASON_WIDTH] == b.reason[:SINFO_REASON_WIDTH]
    assert one.findings[0].id in a.reason


@pytest.mark.parametrize(("reason", "ours"), [
    ("fd:down 3fa2c1 nic down", True), ("fabricdoc: nic down [F001]", True), ("  fd:x", True),
    ("RMA ticket 4711 - bad DIMM", False), ("admin: fd:down copied", False), ("", False), ("Not responding", False),
])
def test_only_reasons_fabricdoc_wrote_are_ours(reason, ours):
    assert is_ours(reason) is ours


# -- what Slurm says now: never over an admin ----------------------------------------------------

STATES = DATA_ROOT / "slurm" / "states"


def _now_from_real_outputs():
    from fabricdoc.scheduler.slurm import slurm_now
    from fabricdoc.sources.slurm import parse_reservations, parse_sinfo_nodes

    nodes = parse_sinfo_nodes((STATES / "sinfo-N-all.txt").read_text())
    res = parse_reservations((STATES / "scontrol-show-res.txt").read_text())
    return slurm_now(nodes, res)


def test_real_node_states_and_reservations_parse_with_their_text():
    now = _now_from_real_outputs()
    assert now["fdsl-node0001"].state == "drained" and now["fdsl-node0001"].reason == "RMA ticket 4711 - bad DIMM"
    assert now["fdsl-node0002"].state == "down" and now["fdsl-node0002"].reason == "admin | cable swap; ticket 42"
    assert now["fdsl-node0004"].state == "idle" and now["fdsl-node0004"].reason == ""  # "none" is no reason
    assert now["fdsl-node0004"].reservation == "maint_window (MAINT,SPEC_NODES)"
    from fabricdoc.sources.slurm import parse_reservations

    assert parse_reservations((STATES / "scontrol-show-res-none.txt").read_text()) == []


def test_a_job_nodelist_comes_from_scontrol_show_job():
    from fabricdoc.sources.slurm import parse_job_nodelist

    assert parse_job_nodelist((STATES / "scontrol-show-job.txt").read_text()) == "fdsl-node[0003-0004]"
    with pytest.raises(ParseError, match="no nodes yet"):
        parse_job_nodelist("JobId=9 JobName=x JobState=PENDING NodeList=(null) NumNodes=2\n")


def test_drain_leaves_admin_drains_downs_reservations_and_its_own_drains_alone():
    now = _now_from_real_outputs()
    rep = make_report(bad_hosts=["node0001", "node0002", "node0003", "node0004"])
    actions, skipped = plan_drain(rep, NameMap(rules=(HostRule.of(r"node(\d+)", r"fdsl-node\1"),)), now=now)
    assert actions == []
    why = {s.node: s.why for s in skipped}
    assert "drained by someone else (reason: RMA ticket 4711 - bad DIMM): left alone" in why["fdsl-node0001"]
    assert "down by someone else" in why["fdsl-node0002"]
    assert why["fdsl-node0003"].startswith("already drained by fabricdoc")
    assert "in reservation maint_window (MAINT,SPEC_NODES): left alone" in why["fdsl-node0004"]
    assert not any(s.refused for s in skipped)


def test_drain_refuses_a_node_slurm_does_not_know():
    from fabricdoc.scheduler.slurm import NodeNow

    actions, skipped = plan_drain(make_report(bad_hosts=["node0001"]), now={"other": NodeNow("idle")})
    assert actions == [] and skipped[0].refused and "Slurm has no node 'node0001'" in skipped[0].why


@pytest.mark.parametrize("state", ["idle", "allocated", "mixed", "completing", "idle*", "mixed~"])
def test_drain_acts_only_on_nodes_in_service_without_anyones_reason(state):
    from fabricdoc.scheduler.slurm import NodeNow

    actions, _ = plan_drain(make_report(bad_hosts=["node0001"]), now={"node0001": NodeNow(state)})
    assert [a.action for a in actions] == ["drain"]


def test_resume_never_touches_a_node_whose_reason_an_admin_replaced():
    from fabricdoc.scheduler.slurm import NodeNow

    later = make_report()
    now = {"node0001": NodeNow("drained", "RMA ticket 4711 - bad DIMM"),
           "node0002": NodeNow("drained", "fd:down 3fa2c1 nic down")}
    actions, skipped = plan_resume(later, ["node0001", "node0002"], now=now)
    assert [a.node for a in actions] == ["node0002"]
    assert "not fabricdoc's now (drained, RMA ticket 4711 - bad DIMM): left alone" in skipped[0].why


def test_an_incomplete_later_report_resumes_nothing():
    later = make_report()
    later.coverage = {**later.coverage, "complete": False, "not_seen_count": 3}
    actions, skipped = plan_resume(later, ["node0001"])
    assert actions == [] and "did not see everything it planned (3 not seen)" in skipped[0].why


def test_comment_mode_annotates_instead_of_draining_and_clears_only_its_own_comments():
    from fabricdoc.scheduler.slurm import NodeNow

    rep = make_report(bad_hosts=["node0001"])
    (act,), _ = plan_drain(rep, now={"node0001": NodeNow("allocated")}, mode="comment")
    assert act.action == "comment" and act.argv[3].startswith("comment=fd:down ")
    assert "state=" not in " ".join(act.argv)
    assert format_argv(act.argv).endswith(f'comment="{act.reason}"')
    now = {"node0001": NodeNow("idle", comment=act.reason), "node0002": NodeNow("idle", comment="GPU swap 5/12")}
    actions, skipped = plan_resume(make_report(), ["node0001", "node0002"], now=now, mode="comment")
    assert [(a.action, a.argv[-1]) for a in actions] == [("uncomment", "comment=")]
    assert "comment is not fabricdoc's" in skipped[0].why
