"""Every parser entry point against mutated real inputs (issue 30): a bad input is a FabricdocError
naming where it is, or is read; never another exception, never a hang.

Each entry point gets a real captured output from ``tests/data`` and hypothesis picks mutations of the
classes real bad input comes in: a number grown to thousands of digits, a value swapped for another
type (JSON and YAML), bytes that are not UTF-8 (through the same decoding every file read uses), deep
nesting, a line of megabytes, a cut at any point. Bounded in examples, not in time: a parser that went
quadratic would hang this test (pytest-timeout ends it), which is the failure it exists to show.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests_log
from fabricdoc.probes.host.dcb import parse_dcb_pfc
from fabricdoc.probes.host.ethtool import parse_ethtool_stats
from fabricdoc.probes.host.kmsg import parse_kmsg
from fabricdoc.probes.host.mlnx_qos import parse_mlnx_qos
from fabricdoc.probes.ib.ibdiagnet import (
    parse_db_csv,
    parse_ibdiagnet_lst,
    parse_ibdiagnet_net_dump,
    parse_ibdiagnet_pm,
)
from fabricdoc.probes.ib.iblinkinfo import parse_iblinkinfo_lines
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports
from fabricdoc.probes.ib.ibqueryerrors import parse_ibqueryerrors
from fabricdoc.probes.ib.ibroute import parse_routes
from fabricdoc.probes.ib.ibtracert import parse_ibtracert
from fabricdoc.probes.ib.perfquery import parse_perfquery
from fabricdoc.probes.kubectl import parse_kubectl_nodes
from fabricdoc.probes.nccl.debug import parse_nccl_debug
from fabricdoc.probes.nccl.inspector import parse_inspector
from fabricdoc.probes.nccl.ras import parse_ncclras
from fabricdoc.probes.slurm import parse_sinfo_reasons
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricdoc.errors import FabricdocError
from fabricdoc.model.inputs import decode
from fabricdoc.report.validation import validate_report
from fabricdoc.sources.records import records_from_json
from tests.helpers.paths import DATA

ROOT = Path(__file__).resolve().parents[2]


def _json_report(text: str) -> None:
    from fabricdoc.model.inputs import loads_json

    validate_report(loads_json(text, "report.json"), "report.json")


def _fabric_yaml(text: str, tmp: Path) -> None:
    from fabricdoc.fabric.fabricfile import read_fabric_file

    path = tmp / "fabric.yaml"
    path.write_text(text)
    read_fabric_file(path)


# (name, the entry point on text, a real input it reads)
ENTRY_POINTS: list[tuple[str, Callable[[str], object], Path]] = [
    ("ibnetdiscover", lambda t: parse_ibnetdiscover(t, "x"), DATA / "ib/ibnetdiscover/healthy/stdout.txt"),
    ("ibnetdiscover -p", lambda t: parse_ibnetdiscover_ports(t, "x"), DATA / "ib/ibnetdiscover/ports/stdout.txt"),
    ("routes", lambda t: parse_routes(t, "x"), DATA / "ib/dump_fts/fat_tree_64/stdout.txt"),
    ("iblinkinfo", lambda t: parse_iblinkinfo_lines(t, "x"), DATA / "ib/iblinkinfo/healthy/stdout.txt"),
    ("ibqueryerrors", lambda t: parse_ibqueryerrors(t, "x"), DATA / "ib/ibqueryerrors/errors/stdout.txt"),
    ("ibtracert", lambda t: parse_ibtracert(t, "x"), DATA / "ib/ibtracert/node0001_to_node0016/stdout.txt"),
    ("perfquery", lambda t: parse_perfquery(t, "x"), DATA / "ib/perfquery/ca_port/stdout.txt"),
    ("ibdiagnet db_csv", lambda t: parse_db_csv(t, "x"),
     DATA / "ibdiagnet2/real_gary_sequoia_ndr_2025-03-31/ibdiagnet2.db_csv"),
    ("ibdiagnet lst", lambda t: parse_ibdiagnet_lst(t, "x"),
     DATA / "ibdiagnet2/real_gary_sequoia_ndr_2025-03-31/ibdiagnet2.lst"),
    ("ibdiagnet net_dump", lambda t: parse_ibdiagnet_net_dump(t, "x"),
     DATA / "ibdiagnet2/real_gary_sequoia_ndr_2025-03-31/ibdiagnet2.net_dump"),
    ("ibdiagnet pm", lambda t: parse_ibdiagnet_pm(t, "x"),
     DATA / "ibdiagnet2/real_gary_sequoia_ndr_2025-03-31/ibdiagnet2.pm"),
    ("nccl-tests", lambda t: parse_nccl_tests_log(t, "x"), DATA / "nccl/real/all_reduce_2x1_h200_dranet.log"),
    ("nccl debug", lambda t: parse_nccl_debug(t, "x"),
     DATA / "nccl-debug/real_odissei_snellius_h100_2node_netib_roce_mix/all_reduce_mpi.log"),
    ("ncclras", lambda t: parse_ncclras(t, "x"), DATA / "nccl-ras/doc_nccl_ras_json_status_2.29.1/ncclras.json"),
    ("nccl inspector", lambda t: parse_inspector(t, "x"),
     DATA / "nccl-inspector/doc_nccl_inspector_readme_coll_perf_v4.0/inspector.log"),
    ("ethtool -S", lambda t: parse_ethtool_stats(t, "x"), DATA / "ethtool/mlx5_cx6/ethtool-S.txt"),
    ("kernel log", lambda t: parse_kmsg(t, "h", "x"), DATA / "kmsg/real_cx6dx_dmesg_link_temp_health/dmesg.txt"),
    ("dcb pfc", lambda t: parse_dcb_pfc(t, "x"), DATA / "dcb/real_hns3_kernel_commit_pfc_show/after.txt"),
    ("mlnx_qos", lambda t: parse_mlnx_qos(t, "x"), DATA / "mlnx_qos/real_centos_trust_dscp_default_map/mlnx_qos.txt"),
    ("sinfo -R", lambda t: parse_sinfo_reasons(t), DATA / "sinfo/reasons/sinfo-R.txt"),
    ("kubectl nodes", lambda t: parse_kubectl_nodes(t), DATA / "kubectl/real_kubeadm_v1.22_flannel_3nodes/get-nodes.json"),
]
def _mutate(text: str, kind: str, at: float) -> str:
    """One mutation of ``kind`` at relative position ``at`` (0..1) of ``text``."""
    pos = int(at * len(text))
    if kind == "digits":  # a number grown to 5,000 digits
        numbers = list(re.finditer(r"\d+", text))
        if not numbers:
            return text + "9" * 5000
        m = numbers[int(at * (len(numbers) - 1))]
        return text[: m.start()] + "9" * 5000 + text[m.end():]
    if kind == "long line":  # a line of megabytes: linear parsing or a hang
        return text[:pos] + ("a1: " * 500_000) + text[pos:]
    if kind == "cut":
        return text[:pos]
    if kind == "controls":  # a right-to-left override and an escape in the middle of a name
        return text[:pos] + "\u202e\x1b[2J" + text[pos:]
    if kind == "nesting":
        return text[:pos] + "[" * 5000 + text[pos:]
    return text


def _attempt(parse: Callable[[str], object], text: str) -> None:
    try:
        parse(text)
    except FabricdocError as exc:
        assert "\n" not in str(exc).strip() or len(str(exc)) < 100_000, "one line naming the input"


MUTATIONS = st.sampled_from(["digits", "long line", "cut", "controls", "nesting"])
# FABRICDOC_FUZZ_EXAMPLES raises the examples per entry point for a longer hunt by hand (the suite: 12).
FUZZ = settings(max_examples=int(os.environ.get("FABRICDOC_FUZZ_EXAMPLES", "12")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("name", "parse", "sample"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
@FUZZ
@given(kind=MUTATIONS, at=st.floats(0, 1))
def test_a_mutated_real_input_is_read_or_one_error_never_a_crash(name, parse, sample, kind, at):
    _attempt(parse, _mutate(sample.read_text(), kind, at))


@pytest.mark.parametrize(("name", "parse", "sample"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_undecodable_bytes_are_one_error_naming_the_line(name, parse, sample):
    data = sample.read_bytes()
    cut = len(data) // 2
    bad = data[:cut] + b"\xff\xfe" + data[cut:]
    with pytest.raises(FabricdocError, match=r":\d+: not valid UTF-8"):
        parse(decode(bad, "x"))


def _swap(value: object, rng: st.DataObject) -> object:
    """The value with one nested item replaced by another JSON type."""
    other = rng.draw(st.sampled_from([{}, [], "x", 2**70, -1, 1.5e308, None, True, {"a": [{}]}, "\u202e"]))
    if isinstance(value, dict) and value:
        key = rng.draw(st.sampled_from(sorted(value)))
        out = dict(value)
        out[key] = _swap(value[key], rng) if rng.draw(st.booleans()) else other
        return out
    if isinstance(value, list) and value:
        i = rng.draw(st.integers(0, len(value) - 1))
        out = list(value)
        out[i] = _swap(value[i], rng) if rng.draw(st.booleans()) else other
        return out
    return other


@FUZZ
@given(data=st.data())
def test_records_with_values_of_the_wrong_type_are_one_error(data):
    from fabricdoc.model.records import PairResult, PortRef
    from fabricdoc.sources.records import records_to_json

    doc = json.loads(records_to_json([PairResult(PortRef("a", 1), PortRef("b", 1), "ok", 10.0, 20.0)]))
    _attempt(lambda t: records_from_json(t, "x"), json.dumps(_swap(doc, data)))


@FUZZ
@given(data=st.data())
def test_a_report_with_values_of_the_wrong_type_is_refused_or_read(data, tmp_path_factory):
    from fabricdoc.report.report import Report
    from tests.helpers.reports import make_report

    doc = json.loads(make_report(bad_hosts=["node0003"]).to_json())
    out = tmp_path_factory.mktemp("r") / "r.json"
    out.write_text(json.dumps(_swap(doc, data)))
    with contextlib.suppress(FabricdocError):
        Report.load(out)


@FUZZ
@given(kind=st.sampled_from(["key", "value", "nesting", "digits"]), at=st.floats(0, 1))
def test_a_mutated_fabric_yaml_is_one_error(kind, at, tmp_path_factory):
    text = (ROOT / "topologies" / "demo.yaml").read_text()
    lines = text.splitlines()
    i = int(at * (len(lines) - 1))
    if kind == "key":
        lines.insert(i, "{}: 1" if not lines[i].startswith(" ") else "  ? [a]\n  : 1")
    elif kind == "value":
        lines[i] = re.sub(r":\s.*$", ": {a: [1, {b: 2}]}", lines[i])
    elif kind == "nesting":
        lines.insert(i, "x: " + "[" * 3000)
    else:
        lines[i] = re.sub(r"\d+", "9" * 5000, lines[i])
    _attempt(lambda t: _fabric_yaml(t, tmp_path_factory.mktemp("f")), "\n".join(lines) + "\n")


@pytest.mark.parametrize(("name", "parse", "sample"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_a_line_of_several_megabytes_is_read_in_linear_time(name, parse, sample):
    # Several shapes of long line; a backtracking regex on any of them would not finish.
    text = sample.read_text()
    for line in ("1" * 3_000_000, "a " * 1_500_000, "0x1 : (" * 400_000, "'" + "a" * 3_000_000):
        _attempt(parse, text[: len(text) // 2] + "\n" + line + "\n" + text[len(text) // 2:])


HOST_MAPS = {
    "hosts.csv": "# HCAs nothing named\nguid,lid,description,host,rail\n0xe09d730300858d88,,,a06-p1-dgx-02-c06,5\n"
                 ",495,,a06-p1-dgx-02-c08,5\n",
    "hosts.yaml": '- {guid: "0xe09d730300858f00", host: b08-p1-dgx-08-c03, rail: 5}\n- {lid: 4242, host: nowhere}\n',
}


@pytest.mark.parametrize("name", sorted(HOST_MAPS))
@FUZZ
@given(kind=MUTATIONS, at=st.floats(0, 1), swap=st.sampled_from(["", "{}", "[1, [2]]", "9" * 5000, "\u202e"]))
def test_a_mutated_host_map_is_one_error(name, kind, at, swap, tmp_path_factory):
    from fabricdoc.fabric.hostmap import load_host_map

    text = _mutate(HOST_MAPS[name], kind, at)
    if swap:
        text = text.replace("5", swap, 1)
    path = tmp_path_factory.mktemp("m") / name
    path.write_text(text)
    with contextlib.suppress(FabricdocError):
        load_host_map(path)
