"""``sweep --hosts`` reads a Slurm hostlist through the one host-list rule, and refuses a malformed one."""

from __future__ import annotations

import pytest

from fabricdoc.cli.main import build_parser, main
from fabricdoc.cli.sweep import config_from_args


def _config(*extra: str):
    return config_from_args(build_parser().parse_args(["sweep", "--fabric", "roce", *extra]))


def test_sweep_hosts_expands_a_bracket_list_next_to_a_plain_name():
    assert _config("--hosts", "node[01-04],gpu7").hosts == ["node01", "node02", "node03", "node04", "gpu7"]


def test_sweep_without_hosts_sweeps_every_host_of_the_fabric():
    assert _config().hosts is None


@pytest.mark.parametrize(("value", "needle"), [
    ("node[01-,gpu7", "--hosts: not a Slurm hostlist"),
    ("node[1-3]-ib", "--hosts: text '-ib' after ']'"),
    (",", "--hosts: no host names"),
])
def test_a_malformed_hosts_list_is_one_line_naming_it_and_exit_2(capsys, value, needle):
    assert main(["sweep", "--fabric", "demo", "--hosts", value, "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert needle in err and value.split(",")[0] in err
