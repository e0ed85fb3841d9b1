"""The one host-list rule (Slurm hostlist syntax): expansion, compression, and errors that name the input."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fabricdoc.model.hostlist as hostlist_module
from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.model.hostlist import compress_hostlist, expand_hostlist, hosts_arg, parse_host_list

INVALID = ["a[1-3]-ib", "b[09-10]x,c1"]  # python-hostlist takes these; Slurm does not


def test_ranges_keep_padding_and_groups_expand_as_a_product():
    assert expand_hostlist("gpu[001-003,007],login1") == ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]
    assert expand_hostlist("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]
    assert expand_hostlist("x[8-11]") == ["x8", "x9", "x10", "x11"]


@pytest.mark.parametrize("bad", [*INVALID, "gpu[1-", "gpu]1[", "gpu[a-b]", "gpu[5-1]", "gpu[1-x]"])
def test_malformed_hostlists_are_parse_errors(bad):
    with pytest.raises(ParseError):
        expand_hostlist(bad)


def test_a_malformed_hostlist_names_its_source_and_line():
    with pytest.raises(ParseError, match=r"^hosts.txt:2: not a Slurm hostlist") as exc:
        parse_host_list("node01  # first\nnode[02-\n", "hosts.txt")
    assert exc.value.line == "node[02-"


def test_compression_is_what_scontrol_show_hostlist_writes():
    assert compress_hostlist(["node03", "node01", "node02", "gpu7"]) == "gpu7,node[01-03]"
    assert compress_hostlist(["x9", "x10", "x8"]) == "x[8-10]"
    assert compress_hostlist(["a001", "a2"]) == "a[001,2]"  # padding is part of the name


_NAME = st.builds(lambda p, n, w: f"{p}{n:0{w}d}", st.sampled_from(["gpu", "node", "r1n", "login"]),
                  st.integers(0, 2000), st.integers(1, 4))


@given(st.lists(_NAME, max_size=40))
def test_compressing_then_expanding_gives_back_the_same_hosts(names):
    assert sorted(expand_hostlist(compress_hostlist(names))) == sorted(set(names))


def test_a_command_line_value_takes_commas_spaces_and_brackets():
    assert hosts_arg("node[01-04],gpu7", "--hosts") == ["node01", "node02", "node03", "node04", "gpu7"]
    assert hosts_arg("a, b a", "--hosts") == ["a", "b"]


def test_a_command_line_value_that_is_malformed_or_empty_names_the_option():
    with pytest.raises(ParseError, match=r"^--hosts: not a Slurm hostlist"):
        hosts_arg("node[01-", "--hosts")
    with pytest.raises(ConfigError, match=r"^--hosts: no host names"):
        hosts_arg(" , ", "--hosts")


def test_the_module_examples_hold():
    assert doctest.testmod(hostlist_module).failed == 0


def test_a_reservation_with_a_malformed_node_list_is_an_error_naming_it():
    from fabricdoc.scheduler.slurm import slurm_now

    now = slurm_now({"gpu01": ("idle", ""), "gpu03": ("idle", "")},
                    [{"name": "maint", "nodes": "gpu[01-02]", "flags": "MAINT"}])
    assert now["gpu01"].reservation == "maint (MAINT)" and now["gpu03"].reservation is None
    with pytest.raises(ParseError, match="^reservation maint: not a Slurm hostlist"):
        slurm_now({}, [{"name": "maint", "nodes": "gpu[01-", "flags": ""}])


def test_the_maintenance_list_expands_hostlists_without_anyone_passing_a_reader():
    from fabricdoc.report.drain_policy import drain_policy_from
    from tests.helpers.reports import make_report

    rep = make_report(bad_hosts=["node0001", "node0002", "node0003"])
    rep.hold_drains(drain_policy_from({"maintenance": ["node[0001-0002]"]}))
    assert [d.node for d in rep.drain] == ["node0003"]
    assert {h.node for h in rep.drain_held} == {"node0001", "node0002"}


def test_a_malformed_maintenance_hostlist_is_refused_when_the_policy_loads(tmp_path):
    from fabricdoc.report.drain_policy import load_drain_policy

    path = tmp_path / "drain.toml"
    path.write_text("maintenance = ['node[0001-', 'leaf01/3']\n")
    with pytest.raises(ConfigError, match=r"drain.toml: key 'maintenance': 'node\[0001-': not a Slurm hostlist"):
        load_drain_policy(str(path))
