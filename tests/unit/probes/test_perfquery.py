"""perfquery dumps as users save them: real ibsim captures and real cluster files, bad files, and
`fabricdoc analyze --perfquery` on two dumps of the same ports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fabricdoc.probes.ib.perfquery import guid_in_name, parse_perfquery

from fabricdoc.errors import ParseError
from fabricdoc.model.counters import lookup, totals
from tests.helpers.paths import DATA

IBSIM = DATA / "ib" / "perfquery"
TREYDOCK_X = DATA / "perfquery" / "real_treydock_osc_edr_perfquery_x"
TREYDOCK_E = DATA / "perfquery" / "real_treydock_osc_edr_perfquery_E"
FABRIC = DATA / "ib" / "ibnetdiscover" / "healthy" / "stdout.txt"  # ibnetdiscover of fabric.net


def _dump(case: str):
    path = IBSIM / case / "stdout.txt"
    return parse_perfquery(path.read_text(), str(path))


def test_a_basic_port_dump_gives_that_ports_ibta_counters():
    (s,) = _dump("switch_port").samples
    assert (s.lid, s.port, s.attribute, s.source) == (3, 5, "PortCounters", "perfquery")
    assert s.values["SymbolErrorCounter"] == 57
    assert s.values["PortXmitWait"] == 0 and s.values["QP1Dropped"] == 0
    assert "PortSelect" not in s.values and "CounterSelect" not in s.values
    assert s.width_bits == {}  # IBTA PortCounters widths: they saturate
    assert lookup("SymbolErrorCounter").saturates_at(s.width_bits.get("SymbolErrorCounter"))
    (c,) = _dump("ca_port").counters(timestamp=10.0)
    assert (c.node, c.port, c.timestamp) == ("lid:4", 1, 10.0)
    assert c.values["PortRcvErrors"] == 0


def test_data_counters_are_4_byte_words_mapped_once():
    (s,) = _dump("switch_port").samples
    got, _ = totals(s.values)
    assert got["xmit_bytes"] == 4 * s.values["PortXmitData"]
    assert got["symbol_errors"] == 57


def test_an_extended_dump_marks_every_counter_64_bits_so_it_wraps():
    (s,) = _dump("switch_extended").samples
    assert (s.lid, s.port, s.source) == (3, 5, "perfquery -x")
    assert set(s.values) == {
        "PortXmitData",
        "PortRcvData",
        "PortXmitPkts",
        "PortRcvPkts",
        "PortUnicastXmitPkts",
        "PortUnicastRcvPkts",
        "PortMulticastXmitPkts",
        "PortMulticastRcvPkts",
    }
    assert set(s.width_bits.values()) == {64}
    assert not lookup("PortXmitData").saturates_at(s.width_bits["PortXmitData"])
    (ca,) = _dump("ca_extended").samples
    assert (ca.lid, ca.port) == (4, 1)


def test_a_loop_over_ports_gives_one_sample_per_port_port_0_included():
    before, after = _dump("switch_loop_before").samples, _dump("switch_loop_after").samples
    assert [(s.lid, s.port) for s in after] == [(3, p) for p in range(7)]
    assert [s.values["SymbolErrorCounter"] for s in before] == [0] * 7
    assert [s.values["SymbolErrorCounter"] for s in after] == [0, 0, 0, 0, 0, 57, 0]
    assert [s.port for s in _dump("switch_loop_extended").samples] == list(range(7))


@pytest.mark.parametrize("case", ["switch_all_ports", "switch_all_ports_extended", "ca_all_ports"])
def test_all_ports_summed_is_kept_apart_never_a_port(case):
    dump = _dump(case)
    assert dump.samples == () and dump.counters() == []
    (agg,) = dump.aggregates
    assert agg.port == 255
    if case == "switch_all_ports":
        assert agg.values["SymbolErrorCounter"] == 57


@pytest.mark.parametrize(
    ("case", "lid", "port"), [("switch_rcv_error_details", 3, 5), ("ca_rcv_error_details", 4, 1)]
)
def test_rcv_error_details_keep_their_own_names(case, lid, port):
    (s,) = _dump(case).samples
    assert (s.lid, s.port, s.attribute, s.source) == (
        lid,
        port,
        "PortRcvErrorDetails",
        "perfquery -E",
    )
    assert s.values == dict.fromkeys(
        (
            "PortLocalPhysicalErrors",
            "PortMalformedPktErrors",
            "PortBufferOverrunErrors",
            "PortDLIDMappingErrors",
            "PortVLMappingErrors",
            "PortLoopingErrors",
        ),
        0,
    )


@pytest.mark.parametrize(
    "case", ["switch_xmit_data_sl", "ca_xmit_data_sl", "switch_extended_speeds"]
)
def test_a_form_ibsim_does_not_answer_is_the_tools_failure(case):
    assert (IBSIM / case / "rc.txt").read_text().strip() == "255"
    with pytest.raises(ParseError, match="iberror") as err:
        _dump(case)
    assert err.value.line_no == 1


def test_the_real_edr_extended_dump_gives_its_values_and_the_guid_in_its_name():
    path = TREYDOCK_X / "perfquery-l-x_0x506b4b03005c2740.out"
    assert guid_in_name(path) == "0x506b4b03005c2740"
    dump = parse_perfquery(path.read_text(), str(path), guid=guid_in_name(path))
    (s,) = dump.samples
    assert (s.lid, s.port, s.guid) == (2052, 1, "0x506b4b03005c2740")
    assert s.values["PortXmitWait"] == 41864608
    assert s.values["LinkDownedCounter"] == 1
    assert s.values["PortXmitDiscards"] == 20046
    assert s.values["PortXmitData"] == 178791657177235
    # PortCountersExtended with the additional counters: 64-bit registers, error counters included.
    assert s.width_bits["SymbolErrorCounter"] == 64 and s.width_bits["PortXmitWait"] == 64
    (c,) = dump.counters(timestamp=0.0)
    assert (c.node, c.port, c.source) == ("0x506b4b03005c2740", 1, "perfquery -x")


def test_the_real_edr_switch_dump_loops_over_two_ports():
    path = TREYDOCK_X / "perfquery-l-x_0x7cfe9003009ce5b0.out"
    a, b = parse_perfquery(path.read_text(), str(path)).samples
    assert [(a.lid, a.port), (b.lid, b.port)] == [(1719, 1), (1719, 2)]
    assert (a.values["PortXmitWait"], b.values["PortXmitWait"]) == (22730501, 36510964)


@pytest.mark.parametrize("path", sorted(TREYDOCK_E.glob("*.out")), ids=lambda p: p.name)
def test_the_real_edr_rcv_error_details_read(path):
    (s,) = parse_perfquery(path.read_text(), str(path)).samples
    assert s.attribute == "PortRcvErrorDetails" and s.lid in (133, 1719, 2052)
    assert s.port == int(path.stem.rsplit("-", 1)[1])
    assert set(s.values.values()) == {0}


def test_several_runs_concatenated_read_as_one_dump():
    text = "".join(
        (IBSIM / c / "stdout.txt").read_text()
        for c in ("switch_port", "switch_extended", "ca_port")
    )
    dump = parse_perfquery(text, "pasted")
    assert [(s.lid, s.port, s.source) for s in dump.samples] == [
        (3, 5, "perfquery"),
        (3, 5, "perfquery -x"),
        (4, 1, "perfquery"),
    ]


def test_a_pasted_dump_without_its_last_line_end_still_reads():
    text = (IBSIM / "ca_port" / "stdout.txt").read_text().rstrip("\n")
    (s,) = parse_perfquery(text, "pasted").samples
    assert s.values["PortXmitWait"] == 0


def test_stderr_saved_with_the_output_is_a_warning_with_its_line():
    text = 'ibwarn: [4711] sim_connect: attached as client 1 at node "spine01"\n'
    text += (IBSIM / "ca_port" / "stdout.txt").read_text()
    dump = parse_perfquery(text, "merged")
    assert len(dump.samples) == 1 and dump.warnings[0].line_no == 1


_BASIC = (IBSIM / "switch_port" / "stdout.txt").read_text()


@pytest.mark.parametrize(
    ("text", "line_no", "reason"),
    [
        (
            _BASIC.replace(
                "PortRcvErrors:...................0", "PortRcvErrors:...................5x7"
            ),
            7,
            "not a perfquery",
        ),
        (
            _BASIC.replace(
                "PortXmitWait:....................0",
                "PortXmitWait:...................." + "9" * 5000,
            ),
            22,
            "longer than any field",
        ),
        (
            _BASIC.replace(
                "PortXmitWait:....................0", "PortXmitWait:...................." + "9" * 25
            ),
            22,
            "wider than any counter",
        ),
        (
            _BASIC.replace(
                "SymbolErrorCounter:..............57", "SymbolErrorCounter:..............70000"
            ),
            4,
            "16-bit register",
        ),
        (
            _BASIC.replace(
                "PortSelect:......................5", "PortSelect:......................6"
            ),
            2,
            "PortSelect 6",
        ),
        ("".join(_BASIC.splitlines(keepends=True)[:12]), 1, "cut short"),
        ("\n".join(_BASIC.splitlines()[:12])[:-1], 12, "middle of a line"),
        ("SymbolErrorCounter:..............57\n", 1, "before any"),
        ("", 0, "empty file"),
        ("\n\n", 0, "empty file"),
        (_BASIC.replace("Lid 3 port 5", "Lid 3 port 300"), 1, "outside 0..255"),
        (_BASIC.replace("# Port counters:", "# Port cointers:"), 1, "not a perfquery block header"),
    ],
    ids=[
        "garbled",
        "5000_digits",
        "25_digits",
        "register",
        "portselect",
        "truncated_block",
        "cut_mid_line",
        "no_header",
        "empty",
        "blank",
        "port_300",
        "bad_header",
    ],
)
def test_bad_input_is_a_parse_error_naming_file_and_line(text, line_no, reason):
    with pytest.raises(ParseError, match=reason) as err:
        parse_perfquery(text, "dump.txt")
    assert (err.value.source, err.value.line_no) == ("dump.txt", line_no)


# -- through the CLI ---------------------------------------------------------------------------


def fabricdoc(*args):
    return subprocess.run(
        [sys.executable, "-m", "fabricdoc", *args], capture_output=True, text=True, timeout=300
    )


def _saved(tmp_path, case: str, name: str, mtime: float):
    path = tmp_path / name
    path.write_text((IBSIM / case / "stdout.txt").read_text())
    os.utime(path, (mtime, mtime))
    return path


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (
            _BASIC.replace(
                "PortRcvErrors:...................0", "PortRcvErrors:...................5x7"
            ).encode(),
            ":7: not a perfquery",
        ),
        (
            _BASIC.replace(
                "PortXmitWait:....................0",
                "PortXmitWait:...................." + "9" * 5000,
            ).encode(),
            ":22: a number longer",
        ),
        (b"", ": no perfquery counters: empty file"),
        (_BASIC.encode().replace(b"PortXmitWait", b"PortXmit\xffWait"), ":22: not valid UTF-8"),
        (
            "".join(_BASIC.splitlines(keepends=True)[:12]).encode(),
            ":1: PortCounters block cut short",
        ),
    ],
    ids=["garbled", "5000_digits", "empty", "not_utf8", "truncated_block"],
)
def test_a_bad_dump_is_one_line_with_file_and_line_and_exit_2(tmp_path, data, needle):
    path = tmp_path / "dump.txt"
    path.write_bytes(data)
    r = fabricdoc("analyze", "--fabric", str(FABRIC), "--perfquery", str(path))
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert f"{path}{needle}" in line and "Traceback" not in r.stderr


def test_symbol_errors_rising_between_two_dumps_blame_that_port(tmp_path):
    before = _saved(tmp_path, "switch_loop_before", "before.txt", 1_700_000_000.0)
    after = _saved(tmp_path, "switch_loop_after", "after.txt", 1_700_000_060.0)
    r = fabricdoc(
        "analyze", "--fabric", str(FABRIC), "--perfquery", str(before), str(after), "--json"
    )
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    (finding,) = report["findings"]
    assert finding["fault"] == "symbol_errors"
    assert ["leaf01", 5] in finding["endpoints"]
    text = fabricdoc(
        "analyze", "--fabric", str(FABRIC), "--perfquery", str(before), str(after)
    ).stdout
    assert "leaf01[5]" in text and "SymbolErrorCounter +57 in 60s" in text


def test_one_dump_is_totals_since_the_last_clear_not_a_verdict(tmp_path):
    after = _saved(tmp_path, "switch_loop_after", "after.txt", 1_700_000_060.0)
    r = fabricdoc("analyze", "--fabric", str(FABRIC), "--perfquery", str(after))
    assert r.returncode == 2
    assert "each of 7 ports was sampled once" in r.stdout
    assert "symbol_errors" not in r.stdout


def test_a_lid_the_fabric_does_not_have_is_not_seen_never_guessed():
    path = TREYDOCK_X / "perfquery-l-x_0x506b4b03005c2740.out"
    r = fabricdoc("analyze", "--fabric", str(FABRIC), "--perfquery", str(path))
    assert r.returncode == 2
    assert "LID 2052 is not in the fabric given by --fabric" in r.stderr


def test_all_ports_summed_is_reported_not_analysed():
    r = fabricdoc(
        "analyze",
        "--fabric",
        str(FABRIC),
        "--perfquery",
        str(IBSIM / "switch_all_ports" / "stdout.txt"),
    )
    assert r.returncode == 2
    assert "LID 3 port 255" in r.stdout and "every port summed" in r.stdout
