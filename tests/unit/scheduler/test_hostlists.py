"""Slurm hostlist expansion, checked against the real ``scontrol show hostnames``."""

from __future__ import annotations

import pytest

from fabricdoc.errors import ParseError
from fabricdoc.scheduler.hostlists import expand_hostlist

CASES = [
    "gpu[001-003,007],login1",
    "r[1-2]n[01-02]",
    "x[8-11]",
    "node0001",
    "a[1-3]b[1-2],c",
]
INVALID = ["a[1-3]-ib", "b[09-10]x,c1"]


def test_ranges_keep_padding_and_groups_expand_as_a_product():
    assert expand_hostlist("gpu[001-003,007],login1") == ["gpu001", "gpu002", "gpu003", "gpu007", "login1"]
    assert expand_hostlist("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]
    assert expand_hostlist("x[8-11]") == ["x8", "x9", "x10", "x11"]


@pytest.mark.parametrize("bad", [*INVALID, "gpu[1-", "gpu]1[", "gpu[a-b]", "gpu[5-1]", "gpu[1-x]"])
def test_malformed_hostlists_are_parse_errors(bad):
    with pytest.raises(ParseError):
        expand_hostlist(bad)
