"""Slurm hostlist expansion, checked against the real ``scontrol show hostnames``."""

from __future__ import annotations

import pytest

from fabricdoc.model.hostlist import expand_hostlist

CASES = [
    "gpu[001-003,007],login1",
    "r[1-2]n[01-02]",
    "x[8-11]",
    "node0001",
    "a[1-3]b[1-2],c",
]
INVALID = ["a[1-3]-ib", "b[09-10]x,c1"]


@pytest.mark.slurm
@pytest.mark.parametrize("expr", CASES)
def test_expansion_matches_scontrol_show_hostnames(slurm_cluster, expr):
    real = slurm_cluster.run("scontrol", "show", "hostnames", expr).stdout.split()
    assert expand_hostlist(expr) == real


@pytest.mark.slurm
@pytest.mark.parametrize("expr", INVALID)
def test_what_we_refuse_scontrol_calls_invalid_too(slurm_cluster, expr):
    cp = slurm_cluster.run("scontrol", "show", "hostnames", expr)
    assert cp.stdout.split() == [] and "Invalid hostlist" in cp.stderr
