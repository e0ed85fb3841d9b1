"""Forwarding tables as saved on real systems: dump_fts (DR-path headers), ibroute dumps with the tools'
warnings between switches (both captured under ibsim, tests/data/ib/), and ibdiagnet's fdbs layout."""

from __future__ import annotations

import pytest
from fabricdoc.probes.ib.ibdiagnet import parse_ibdiagnet_fdbs
from fabricdoc.probes.ib.ibroute import parse_ibroute, parse_routes

from fabricdoc.errors import ParseError
from tests.helpers.ib import captured
from tests.helpers.paths import DATA

FDBS = DATA / "ibdiagnet2" / "real_index_fdbs_docstring_excerpt" / "ibdiagnet2.fdbs"


def test_dump_fts_headers_by_dr_path_give_every_switch_its_table():
    routes = parse_routes(captured("dump_fts", "healthy"), source="dump_fts")
    assert [(r.description, r.switch_lid, r.line_no) for r in routes.routes] == [
        ("spine02", 2, 1), ("leaf04", 18, 27), ("leaf03", 13, 53), ("leaf02", 8, 79), ("leaf01", 3, 105),
        ("spine01", 1, 131)]
    leaf01 = next(r for r in routes.routes if r.description == "leaf01")
    assert leaf01.lft == parse_ibroute(captured("ibroute", "leaf01")).lft  # the same LFT ibroute read
    assert leaf01.switch_guid == "0x0002c90200000003" and routes.warnings == ()


def test_dump_fts_with_mad_timeouts_keeps_the_warnings_with_their_lines():
    routes = parse_routes(captured("dump_fts", "mad_drops_stderr"), source="d")
    assert [w.line_no for w in routes.warnings] == [1, 2]
    assert routes.warnings[1].text.startswith("./libibnetdisc/query_smp.c:186; umad (DR path slid 0; dlid 0; 0,1,3")
    assert len(routes.routes) == 6


def test_ibroute_dumps_with_warning_lines_between_switches_read_every_switch():
    text = captured("ibroute", "all_switches_stderr")
    routes = parse_routes(text, source="r")
    assert [r.description for r in routes.routes] == ["spine01", "spine02", "leaf01", "leaf02", "leaf03", "leaf04"]
    assert [w.line_no for w in routes.warnings] == [1, 2, 29, 30, 57, 58, 85, 86, 113, 114, 141, 142]
    assert all("_do_madrpc failed; dport (Lid 6)" in w.text for w in routes.warnings[1::2])
    leaf01 = routes.routes[2]
    assert leaf01.lft[6] == 3 and 6 not in leaf01.destinations  # node0003 answers no MAD: "(unknown node and type)"


def test_a_dump_cut_before_its_trailer_names_the_switch_block_that_ends_early():
    text = captured("dump_fts", "healthy")
    cut = "".join(text.splitlines(keepends=True)[:60])
    with pytest.raises(ParseError, match="ends early") as info:
        parse_routes(cut, source="d")
    assert info.value.line_no == 53  # leaf03's block


def test_a_trailer_that_miscounts_is_refused():
    text = captured("ibroute", "leaf01").replace("22 valid lids dumped", "23 valid lids dumped")
    with pytest.raises(ParseError, match="says 23 lids but lists 22"):
        parse_ibroute(text, source="x")


def test_ibdiagnet_fdbs_reads_routes_and_leaves_unreachable_lids_out():
    routes = parse_ibdiagnet_fdbs(FDBS.read_text(), str(FDBS))
    (route,) = routes.routes
    assert route.switch_guid == "0x0002c9030068ec10" and route.line_no == 1
    assert route.lft == {2: 3, 3: 2, 4: 1, 5: 2, 6: 2, 7: 3, 8: 2, 9: 5, 10: 5}  # LID 1: UNREACHABLE


def test_an_fdbs_line_that_is_not_an_entry_names_its_line():
    text = FDBS.read_text().replace("0x0004 : 001  : 00   : yes", "0x0004 : one : 00 : yes")
    with pytest.raises(ParseError) as info:
        parse_ibdiagnet_fdbs(text, "fdbs")
    assert info.value.line_no == 6
