"""Port counts and port numbers are 8-bit IBTA fields (NodeInfo NumPorts, PortNum): a real
Quantum-2 declares 65. A file claiming 4e9 ports, or a cable to port 2^32, is fabricdoc's own
ParseError naming the file and the line, never a loop over billions of ports.

Every hostile input here is one line of a real capture (tests/data/) changed."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from fabricdoc.probes.ib import ibdiagnet as diag
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports

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


# -- ibnetdiscover --------------------------------------------------------------------------


def test_the_real_quantum2_capture_declares_65_ports_and_parses():
    topo = parse_ibnetdiscover(IBND.read_text(encoding="utf-8"), str(IBND), partial=True)
    assert {n.num_ports for n in topo.nodes if n.type == "Switch"} == {65}


@pytest.mark.parametrize("count", [HUGE, 256, 0])
def test_a_node_declaring_a_port_count_outside_1_to_255_is_refused(count):
    text = edit_line(IBND, 19, "Switch  65 ", f"Switch  {count} ")
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(text, str(IBND), partial=True)
    assert_names(exc, IBND, 19, str(count), "1..255")


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
    text = edit_line(IBND, 20, old, new)
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(text, str(IBND), partial=True)
    assert_names(exc, IBND, 20, *words)


def test_a_cable_to_a_port_its_far_node_does_not_have_is_refused():
    # Line 35: the leaf's port 1 leads to 'h4-1-gpu HCA-4' port 1, a one-port CA described at line 155.
    text = edit_line(IBND, 35, '"H-5c25730300e68e86"[1]', '"H-5c25730300e68e86"[2]')
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(text, str(IBND), partial=True)
    assert_names(exc, IBND, 35, "remote port 2", "'h4-1-gpu HCA-4'", "1-port", "line 155")


@pytest.mark.parametrize(("old", "new", "word"), [
    ("CA   134  1 0x", f"CA   134  {HUGE} 0x", str(HUGE)),
    ("SW  1719 10 0x7cfe9003009ce5b0 (", "SW  1719 256 0x7cfe9003009ce5b0 (", "peer port 256"),
])
def test_a_ports_report_line_with_a_port_outside_1_to_255_is_refused(old, new, word):
    text = edit_line(PORTS_REPORT, 1, old, new)
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover_ports(text, str(PORTS_REPORT))
    assert_names(exc, PORTS_REPORT, 1, word)


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
    text = edit_line(path, 8, old, new)
    with pytest.raises(ParseError) as exc:
        diag.parse_ibdiagnet_lst(text, str(path))
    assert_names(exc, path, 8, word)


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


# -- the command ----------------------------------------------------------------------------


def test_analyze_on_a_file_declaring_4e9_ports_exits_2_with_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "hostile.topo"
    path.write_text(edit_line(IBND, 19, "Switch  65 ", f"Switch  {HUGE} "), encoding="utf-8")
    done = run_fabricdoc("analyze", "--topology", str(path), timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}:19" in lines[0] and str(HUGE) in lines[0]
    assert "Traceback" not in done.stderr and not done.stdout.strip()
