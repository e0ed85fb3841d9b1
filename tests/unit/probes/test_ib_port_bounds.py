"""Port counts and port numbers are 8-bit IBTA fields (NodeInfo NumPorts, PortNum): a real
Quantum-2 declares 65. A file claiming 4e9 ports, or a cable to port 2^32, is fabricdoc's own
ParseError naming the file and the line, never a loop over billions of ports.

Every hostile input here is one line of a real capture (tests/data/) changed."""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import pytest
from fabricdoc.probes.ib import ibdiagnet as diag
from fabricdoc.probes.ib.iblinkinfo import parse_iblinkinfo
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports
from fabricdoc.probes.ib.ibqueryerrors import parse_ibqueryerrors
from fabricdoc.probes.ib.ibroute import parse_ibroute, parse_routes
from fabricdoc.probes.ib.ibtracert import parse_ibtracert

from fabricdoc.errors import ParseError
from fabricdoc.sources.ibdiagnet import read_ibdiagnet_dir
from fabricdoc.sources.infiniband import load_ibnetdiscover_file
from tests.helpers.cli import run_fabricdoc
from tests.helpers.paths import DATA

IBND = DATA / "ibnetdiscover" / "real_gary_sequoia_ndr_ibdiagnet2_hca_naming" / "ibdiagnet2.ibnetdiscover"
PORTS_REPORT = DATA / "ibnetdiscover-ports" / "real_treydock_osc_edr_fixture" / "test.out"
DIAG = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
CABLES = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_cables" / "ibdiagnet2.cables"
FDBS = DATA / "ibdiagnet2" / "real_index_fdbs_docstring_excerpt" / "ibdiagnet2.fdbs"
ILI = DATA / "iblinkinfo" / "real_blog_hdr_quantum_20node_sharp_an" / "iblinkinfo.txt"
# infiniband-diags 44.0 under ibsim on tests/data/ib/fabric.net (tests/data/ib/README.md)
IQE = DATA / "ib" / "ibqueryerrors" / "errors" / "stdout.txt"
IBROUTE = DATA / "ib" / "ibroute" / "leaf01" / "stdout.txt"
DUMP_FTS = DATA / "ib" / "dump_fts" / "healthy" / "stdout.txt"
SIM_TOPO = DATA / "ib" / "ibnetdiscover" / "healthy" / "stdout.txt"
TRACE = DATA / "ib" / "ibtracert" / "node0001_to_node0016" / "stdout.txt"
HUGE = 4_000_000_000
# IBND is trimmed (whole blocks of two switches and some CAs kept; see its README): read it as partial.


def edit_line(path: Path, line_no: int, old: str, new: str) -> str:
    """The text of ``path`` with ``old`` replaced by ``new`` on line ``line_no`` (1-based)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert old in lines[line_no - 1], (line_no, lines[line_no - 1])
    lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
    return "".join(lines)


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` that starts with ``text``."""
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(text):
            return no
    raise AssertionError(f"{path} has no line starting with {text!r}")


def edit_db_row(section: str, column: str, value: object, row: int = 0) -> tuple[str, int]:
    """The real db_csv with ``column`` of row ``row`` of ``section`` set to ``value``, and that row's line."""
    path = DIAG / "ibdiagnet2.db_csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines.index(f"START_{section}\n")
    header = next(csv.reader([lines[start + 1]]))
    at = start + 2 + row
    fields = next(csv.reader([lines[at]]))
    fields[header.index(column.strip())] = str(value)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    lines[at] = out.getvalue()
    return "".join(lines), at + 1


def assert_names(exc: pytest.ExceptionInfo[ParseError], source: Path | str, line_no: int, *words: str) -> None:
    err = exc.value
    assert (err.source, err.line_no) == (str(source), line_no)
    assert f"{source}:{line_no}" in str(err)
    for word in words:
        assert word in err.reason


def assert_refused(parse, path: Path, line_no: int, old: str, new: str, *words: str, **kw) -> None:
    """``parse`` (a parser taking text and source) refuses ``path`` with ``old`` replaced by ``new`` on
    line ``line_no``, naming that file and line and each of ``words``."""
    text = edit_line(path, line_no, old, new)
    with pytest.raises(ParseError) as exc:
        parse(text, str(path), **kw)
    assert_names(exc, path, line_no, *words)


# -- ibnetdiscover --------------------------------------------------------------------------


def test_the_real_quantum2_capture_declares_65_ports_and_parses():
    topo = parse_ibnetdiscover(IBND.read_text(encoding="utf-8"), str(IBND), partial=True)
    assert {n.num_ports for n in topo.nodes if n.type == "Switch"} == {65}


@pytest.mark.parametrize("count", [HUGE, 256, 0])
def test_a_node_declaring_a_port_count_outside_1_to_255_is_refused(count):
    assert_refused(parse_ibnetdiscover, IBND, 19, "Switch  65 ", f"Switch  {count} ", str(count), "1..255",
                   partial=True)


def test_a_393_byte_file_declaring_4e9_ports_is_refused_by_the_saved_file_reader(tmp_path):
    lines = IBND.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "tiny.topo"
    path.write_text(lines[18].replace("Switch  65 ", f"Switch  {HUGE} ") + lines[19], encoding="utf-8")
    with pytest.raises(ParseError) as exc:
        load_ibnetdiscover_file(path)
    assert_names(exc, path, 1, str(HUGE))


@pytest.mark.parametrize(("old", "new", "words"), [
    ("[1](1/1/1)", f"[{HUGE}](1/1/1)", (str(HUGE), "65-port")),
    ("[1](1/1/1)", "[0](1/1/1)", ("port 0", "65-port")),
    ('"S-fc6a1c030091cf00"[63]', f'"S-fc6a1c030091cf00"[{HUGE}]', ("remote port", str(HUGE))),
    ('"S-fc6a1c030091cf00"[63]', '"S-fc6a1c030091cf00"[256]', ("remote port", "256")),
])
def test_a_cable_end_outside_8_bits_is_refused(old, new, words):
    assert_refused(parse_ibnetdiscover, IBND, 20, old, new, *words, partial=True)


def test_a_cable_to_a_port_its_far_node_does_not_have_is_refused():
    # Line 35: the leaf's port 1 leads to 'h4-1-gpu HCA-4' port 1, a one-port CA described at line 155.
    assert_refused(parse_ibnetdiscover, IBND, 35, '"H-5c25730300e68e86"[1]', '"H-5c25730300e68e86"[2]',
                   "remote port 2", "'h4-1-gpu HCA-4'", "1-port", "line 155", partial=True)


@pytest.mark.parametrize(("old", "new", "word"), [
    ("CA   134  1 0x", f"CA   134  {HUGE} 0x", str(HUGE)),
    ("SW  1719 10 0x7cfe9003009ce5b0 (", "SW  1719 256 0x7cfe9003009ce5b0 (", "peer port 256"),
])
def test_a_ports_report_line_with_a_port_outside_1_to_255_is_refused(old, new, word):
    assert_refused(parse_ibnetdiscover_ports, PORTS_REPORT, 1, old, new, word)


# -- ibdiagnet ------------------------------------------------------------------------------


@pytest.mark.parametrize(("section", "column", "value", "read"), [
    ("NODES", "NumPorts", HUGE, diag.db_nodes),
    ("NODES", "NumPorts", 0, diag.db_nodes),
    ("PORTS", "PortNum", 256, diag.db_ports),
    ("LINKS", "PortNum2", HUGE, diag.db_links),
    ("LINKS", "PortNum1", 0, diag.db_links),
    ("PM_INFO", "PortNumber", HUGE, diag.db_pm),
])
def test_a_db_csv_row_with_a_port_or_port_count_outside_8_bits_is_refused(section, column, value, read):
    text, line_no = edit_db_row(section, column, value)
    source = str(DIAG / "ibdiagnet2.db_csv")
    with pytest.raises(ParseError) as exc:
        read(diag.parse_db_csv(text, source))
    assert_names(exc, source, line_no, str(value))


@pytest.mark.parametrize(("section", "column", "row", "words"), [
    ("LINKS", "PortNum2", 0, ("LINKS names port 66", "a 1-port node")),
    ("PORTS", "PortNum", 1, ("port 66", "65-port")),
])
def test_an_ibdiagnet_run_naming_a_port_past_its_nodes_count_is_refused(tmp_path, section, column, row, words):
    run = tmp_path / "ibdiagnet2"
    shutil.copytree(DIAG, run)
    text, line_no = edit_db_row(section, column, 66, row)
    (run / "ibdiagnet2.db_csv").write_text(text, encoding="utf-8")
    with pytest.raises(ParseError) as exc:
        read_ibdiagnet_dir(run)
    assert_names(exc, run / "ibdiagnet2.db_csv", line_no, *words)


@pytest.mark.parametrize(("old", "new", "word"), [
    ("{ CA Ports:01 ", "{ CA Ports:ee6b2800 ", str(HUGE)),
    ("LID:0018 PN:01 }", "LID:0018 PN:100 }", "256"),
    ("LID:0018 PN:01 }", "LID:0018 PN:42 }", "66"),  # the switch says Ports:41 (65)
])
def test_an_lst_link_end_with_a_port_or_count_outside_its_node_is_refused(old, new, word):
    path = DIAG / "ibdiagnet2.lst"
    assert_refused(diag.parse_ibdiagnet_lst, path, 8, old, new, word)


def test_net_dump_pm_cables_and_fdbs_refuse_a_port_outside_8_bits():
    net_dump = DIAG / "ibdiagnet2.net_dump"
    with pytest.raises(ParseError) as exc:
        diag.parse_ibdiagnet_net_dump(edit_line(net_dump, 17, ": 1   : ACT", f": {HUGE} : ACT"), str(net_dump))
    assert_names(exc, net_dump, 17, str(HUGE))
    pm = DIAG / "ibdiagnet2.pm"
    with pytest.raises(ParseError) as exc:
        diag.parse_ibdiagnet_pm(edit_line(pm, 16, "Port=1 ", f"Port={HUGE} "), str(pm))
    assert_names(exc, pm, 16, str(HUGE))
    head = line_of(CABLES, "Port=1 ")
    with pytest.raises(ParseError) as exc:
        diag.parse_ibdiagnet_cables(edit_line(CABLES, head, "Port=1 ", "Port=256 "), str(CABLES))
    assert_names(exc, CABLES, head, "256")
    entry = line_of(FDBS, "0x0002 : 003")
    with pytest.raises(ParseError) as exc:
        diag.parse_ibdiagnet_fdbs(edit_line(FDBS, entry, ": 003 ", f": {HUGE} "), str(FDBS))
    assert_names(exc, FDBS, entry, str(HUGE))


def test_the_unedited_ibdiagnet_files_still_read():
    assert diag.parse_ibdiagnet_net_dump((DIAG / "ibdiagnet2.net_dump").read_text(encoding="utf-8"))
    assert diag.parse_ibdiagnet_pm((DIAG / "ibdiagnet2.pm").read_text(encoding="utf-8"))
    assert diag.parse_ibdiagnet_cables(CABLES.read_text(encoding="utf-8"))
    assert diag.parse_ibdiagnet_fdbs(FDBS.read_text(encoding="utf-8")).routes
    assert {e.num_ports for link in diag.parse_ibdiagnet_lst((DIAG / "ibdiagnet2.lst").read_text(encoding="utf-8"))
            for e in (link.a, link.b) if e.type == "Switch"} == {65}


# -- iblinkinfo, ibqueryerrors, ibroute / dump_fts, ibtracert --------------------------------


@pytest.mark.parametrize(("old", "new", "words"), [
    ("1    1[  ]", f"1    {HUGE}[  ]", ("port", str(HUGE), "1..255")),
    ("1    1[  ]", "1    0[  ]", ("port 0", "1..255")),  # iblinkinfo lists ports 1..N, a switch's too
    ("3   40[  ]", "3   256[  ]", ("remote port 256",)),
    ("3   40[  ]", f"3   {2**64}[  ]", ("remote port", str(2**64))),
])
def test_an_iblinkinfo_port_line_with_a_port_outside_1_to_255_is_refused(old, new, words):
    assert_refused(parse_iblinkinfo, ILI, 2, old, new, *words)


def test_the_unedited_iblinkinfo_capture_reads_its_ports_as_printed():
    states = parse_iblinkinfo(ILI.read_text(encoding="utf-8"), str(ILI))
    printed = re.findall(r"(\d+)\[", ILI.read_text(encoding="utf-8").splitlines()[1])  # 'port[' at both ends
    assert (states[0].port, states[0].peer.port) == tuple(int(p) for p in printed)


@pytest.mark.parametrize(("line_no", "old", "new", "words"), [
    (2, "port 1:", "port 0:", ("port 0", "1..255")),  # 'Errors for "node0003"': a CA has no port 0
    (2, "port 1:", "port 256:", ("port 256",)),
    (5, "port 6:", f"port {HUGE}:", (str(HUGE), "0..255")),  # leaf02, a switch
])
def test_an_ibqueryerrors_port_outside_its_nodes_range_is_refused(line_no, old, new, words):
    assert_refused(parse_ibqueryerrors, IQE, line_no, old, new, *words)


def test_a_switchs_port_0_in_ibqueryerrors_is_read():
    text = edit_line(IQE, 5, "port 6:", "port 0:")  # leaf02's management port, as real switches print
    counters = {(c.node, c.port): c.values for c in parse_ibqueryerrors(text, str(IQE)).counters}
    assert counters[("0x0002c90200000004", 0)] == {"LinkDownedCounter": 3}


@pytest.mark.parametrize(("new", "words"), [("256", ("egress port 256", "0..255")),
                                            (str(HUGE), ("egress port", str(HUGE)))])
def test_an_ibroute_entry_with_an_egress_port_outside_8_bits_is_refused(new, words):
    line = line_of(IBROUTE, "0x0001 005 ")
    assert_refused(parse_ibroute, IBROUTE, line, "0x0001 005 ", f"0x0001 {new} ", *words)


def _switch_ports() -> dict[str, int]:
    """Switch GUID -> its port count, from the ibnetdiscover capture of the same fabric."""
    topo = parse_ibnetdiscover(SIM_TOPO.read_text(encoding="utf-8"), str(SIM_TOPO))
    return {n.guid: n.num_ports for n in topo.nodes if n.type == "Switch"}


def test_an_lft_entry_past_the_switchs_port_count_is_refused_when_the_count_is_known():
    counts = _switch_ports()
    leaf01 = counts["0x0002c90200000003"]
    line = line_of(IBROUTE, "0x0001 005 ")
    past = edit_line(IBROUTE, line, "0x0001 005 ", f"0x0001 {leaf01 + 1:03d} ")
    assert parse_ibroute(past, str(IBROUTE)).lft[1] == leaf01 + 1  # the count unknown: 8 bits is all it can check
    assert parse_ibroute(IBROUTE.read_text(encoding="utf-8"), str(IBROUTE), num_ports=leaf01).lft[1] == 5
    with pytest.raises(ParseError) as exc:
        parse_ibroute(past, str(IBROUTE), num_ports=leaf01)
    assert_names(exc, IBROUTE, line, f"port {leaf01 + 1}", f"has {leaf01} ports", "leaf01")
    # dump_fts: every switch's LFT, each bounded by its own count
    assert len(parse_routes(DUMP_FTS.read_text(encoding="utf-8"), str(DUMP_FTS), num_ports=counts).routes) == 6
    line = line_of(DUMP_FTS, "0x0001 005 ")  # leaf01's block
    with pytest.raises(ParseError) as exc:
        parse_routes(edit_line(DUMP_FTS, line, "0x0001 005 ", f"0x0001 {leaf01 + 1:03d} "), str(DUMP_FTS),
                     num_ports=counts)
    assert_names(exc, DUMP_FTS, line, f"port {leaf01 + 1}")


def test_a_dump_fts_dr_path_port_outside_8_bits_is_refused():
    line = line_of(DUMP_FTS, "Unicast lids [0x0-0x16] of switch DR path slid 0; dlid 0; 0,1,6 ")
    assert_refused(parse_routes, DUMP_FTS, line, "0,1,6 ", "0,1,256 ", "DR path port 256")


@pytest.mark.parametrize(("line_no", "old", "new", "words"), [
    (1, "portnum 1 ", "portnum 0 ", ("portnum 0", "1..255")),  # 'From ca': a CA has no port 0
    (1, "portnum 1 ", f"portnum {HUGE} ", (str(HUGE),)),
    (2, "[1] -> switch", "[256] -> switch", ("out port 256",)),
    (2, "}[1] lid", f"}}[{2**64}] lid", ("in port", str(2**64))),
    (3, "}[1] lid", "}[0] lid", ("in port 0",)),  # a packet enters a switch on a cable, never port 0
    (6, "portnum 1 ", "portnum 256 ", ("portnum 256",)),
])
def test_an_ibtracert_hop_with_a_port_outside_its_range_is_refused(line_no, old, new, words):
    assert_refused(parse_ibtracert, TRACE, line_no, old, new, *words)


def test_an_ibtracert_from_a_switch_may_start_at_its_port_0():
    text = edit_line(TRACE, 1, "From ca {0x0002c90300000001} portnum 1 ", "From switch {0x0002c90300000001} portnum 0 ")
    assert parse_ibtracert(text, str(TRACE)).src_port == 0


# -- the command ----------------------------------------------------------------------------


def test_analyze_on_a_file_declaring_4e9_ports_exits_2_with_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "hostile.topo"
    path.write_text(edit_line(IBND, 19, "Switch  65 ", f"Switch  {HUGE} "), encoding="utf-8")
    done = run_fabricdoc("analyze", "--topology", str(path), timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}:19" in lines[0] and str(HUGE) in lines[0]
    assert "Traceback" not in done.stderr and not done.stdout.strip()
