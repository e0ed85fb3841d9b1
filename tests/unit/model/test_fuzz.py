"""A mutation fuzzer over the captured real outputs in tests/data: every parser and ``analyze`` end to
end may accept a mutated input or refuse it with fabricdoc's own error, and nothing else.

Deterministic (seeded), so a failure names the file, the seed and the mutation that broke it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from fabricdoc.errors import FabricdocError
from fabricdoc.model.inputs import decode
from tests.helpers.paths import DATA

MUTATIONS_PER_FILE = 60
NASTY = ["-1", "1e309", "nan", "inf", "NaN", "9" * 5000, "18446744073709551616", "\x00", "\x1b[2J", "\u202e",
         "[[[[[[[[", "{", "\"", "&a", "*a", "0x", "4xNDR", "  ", "\t"]


def _mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of ``data`` and a description of it."""
    lines = data.split(b"\n")
    kind = rng.randrange(9)
    if kind == 0 and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :], f"byte {i} replaced"
    if kind == 1 and data:
        i = rng.randrange(len(data))
        return data[:i], f"truncated at {i}"
    if kind == 2 and len(lines) > 1:
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + lines[i + 1 :]), f"line {i + 1} deleted"
    if kind == 3 and lines:
        i = rng.randrange(len(lines))
        return b"\n".join(lines[: i + 1] + lines[i:]), f"line {i + 1} doubled"
    if kind == 4 and data:
        i = rng.randrange(len(data))
        return data[:i] + b"\xff\xfe\xc3" + data[i:], f"invalid UTF-8 at {i}"
    if kind == 5:
        tokens = data.split(b" ")
        i = rng.randrange(len(tokens))
        nasty = rng.choice(NASTY).encode()
        tokens[i] = nasty
        return b" ".join(tokens), f"token {i} -> {nasty[:20]!r}"
    if kind == 6:
        import re

        numbers = list(re.finditer(rb"\d+", data))
        if numbers:
            m = rng.choice(numbers)
            nasty = rng.choice([b"-5", b"99999999999999999999999", b"1e999", b"0", b"65536", b"4294967296"])
            return data[: m.start()] + nasty + data[m.end() :], f"number at {m.start()} -> {nasty!r}"
    if kind == 7 and len(lines) > 2:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines), f"lines {i + 1} and {j + 1} swapped"
    return data + rng.choice(NASTY).encode() * rng.randrange(1, 50), "garbage appended"


def _text_target(fn: Callable[[str, str], object]) -> Callable[[bytes, str], object]:
    def run(data: bytes, source: str) -> object:
        return fn(decode(data, source), source)

    return run


def _targets() -> dict[str, tuple[Callable[[bytes, str], object], list[Path]]]:
    from fabricdoc.probes.bandwidth import nccl_tests
    from fabricdoc.probes.host.ethtool import parse_ethtool_stats
    from fabricdoc.probes.host.netstat import parse_netstat
    from fabricdoc.probes.ib.iblinkinfo import parse_iblinkinfo
    from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover
    from fabricdoc.probes.ib.ibqueryerrors import parse_ibqueryerrors
    from fabricdoc.probes.ib.ibroute import parse_ibroute
    from fabricdoc.probes.ib.ibtracert import parse_ibtracert

    from fabricdoc.analysis.rules import rules_from_toml
    from fabricdoc.model.hostlist import parse_host_list
    from fabricdoc.model.inputs import loads_json
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.names import parse_text_map
    from fabricdoc.sources.records import records_from_json
    from fabricdoc.sources.slurm import parse_sinfo_reasons

    def tool(name: str) -> list[Path]:
        return sorted((DATA / "ib" / name).glob("*/stdout.txt"))

    parse_nccl = nccl_tests.parse_nccl_tests

    def report(text: str, source: str) -> object:
        return Report.from_dict(loads_json(text, source), source)

    return {
        "ibnetdiscover": (_text_target(parse_ibnetdiscover), tool("ibnetdiscover") + [DATA / "ib" / "fabric.net"]),
        "iblinkinfo": (_text_target(parse_iblinkinfo), tool("iblinkinfo")),
        "ibqueryerrors": (_text_target(parse_ibqueryerrors), tool("ibqueryerrors")),
        "ibroute": (_text_target(parse_ibroute), tool("ibroute")),
        "ibtracert": (_text_target(parse_ibtracert), tool("ibtracert")),
        "ethtool": (_text_target(parse_ethtool_stats), sorted((DATA / "ethtool").glob("*/ethtool-S.txt"))),
        "netstat": (_text_target(parse_netstat), []),
        "nccl-tests": (_text_target(parse_nccl), sorted((DATA / "nccl").rglob("*.log"))[:12]),
        "records": (_text_target(records_from_json), []),
        "report": (_text_target(report), []),
        "rules": (_text_target(rules_from_toml), [Path(__file__).parents[3] / "fabricdoc/analysis/counter_rules.toml"]),
        "host list": (_text_target(parse_host_list), []),
        "name map": (_text_target(parse_text_map), []),
        "sinfo": (_text_target(parse_sinfo_reasons), sorted((DATA / "sinfo" / "reasons").glob("*.txt"))),
    }


SEEDS = {
    "report": b"",  # filled from a real demo sweep below
    "host list": b"gpu[001-016] login1\n# spare\nnode0001\n",
    "name map": b"node0001 mlx5_0  gpu001\nnode0002 mlx5_0 gpu002 # comment\n",
}


@pytest.fixture(scope="module")
def demo_report_bytes() -> bytes:
    from fabricdoc.sweep import SweepConfig, run_sweep

    return run_sweep(SweepConfig(fabric="demo")).to_json().encode()


@pytest.fixture(scope="module")
def demo_records_bytes() -> bytes:
    """Records as the simulator writes them for a few ports of the demo fabric (counters, states, events)."""
    from fabricdoc.sources.fabrics import load_fabric
    from fabricdoc.sources.records import records_to_json
    from fabricdoc.sources.sim.simulator import Simulator

    fabric, faults = load_fabric("demo")
    sim = Simulator(fabric, faults, seed=1)
    before, after = sim.counters()
    return records_to_json([*before[:4], *after[:4], *sim.port_states()[:4], *sim.events()[:4]], indent=1).encode()


@pytest.mark.parametrize("target", sorted(_targets()))
def test_every_parser_accepts_or_refuses_mutated_real_inputs_with_its_own_error(target, demo_report_bytes,
                                                                                demo_records_bytes):
    fn, files = _targets()[target]
    seeds = [(p.name if not p.is_relative_to(DATA) else str(p.relative_to(DATA)), p.read_bytes()) for p in files]
    if target == "report":
        seeds = [("demo report", demo_report_bytes)]
    elif target == "netstat":
        seeds = [("/proc/net/netstat of this machine", Path("/proc/net/netstat").read_bytes())]
    elif target == "records":
        seeds = [("demo sweep records", demo_records_bytes)]
    elif not seeds:
        seeds = [(target, SEEDS[target])]
    assert seeds, f"no captured inputs for {target}"
    for name, data in seeds:
        rng = random.Random(f"{target}:{name}")
        for i in range(MUTATIONS_PER_FILE):
            mutated, how = _mutate(data, rng)
            try:
                fn(mutated, f"{name} (mutation {i})")
            except FabricdocError:
                pass
            except Exception as exc:  # noqa: BLE001 - the point: anything else is a bug
                pytest.fail(f"{target} on {name}, mutation {i} ({how}): {type(exc).__name__}: {exc}")


def test_analyze_end_to_end_on_mutated_fabric_and_records_never_crashes(tmp_path, capsys):
    from fabricdoc.cli.main import main
    from fabricdoc.model.records import PortCounters
    from fabricdoc.sources.records import records_to_json

    fabric = b"name: small\ngenerator: fat_tree_2\nparams: {leaves: 2, spines: 1, hosts_per_leaf: 2}\n"
    records = records_to_json([PortCounters(f"node000{i}", 1, t, {"SymbolErrorCounter": int(t)}, source="sysfs")
                               for i in range(1, 5) for t in (0.0, 10.0)]).encode()
    rng = random.Random("analyze")
    for i in range(80):
        f_bytes, f_how = _mutate(fabric, rng) if i % 2 else (fabric, "as is")
        r_bytes, r_how = _mutate(records, rng) if i % 3 else (records, "as is")
        (tmp_path / "f.yaml").write_bytes(f_bytes)
        (tmp_path / "r.json").write_bytes(r_bytes)
        code = main(["analyze", "--fabric", str(tmp_path / "f.yaml"), "--records", str(tmp_path / "r.json")])
        err = capsys.readouterr().err
        assert code in (0, 1, 2), (f_how, r_how)
        assert "internal error" not in err, f"mutation {i}: fabric {f_how}, records {r_how}: {err}"
        if code == 2:
            assert err.count("\n") <= 1, err


@pytest.mark.parametrize(("option", "name", "text"), [
    ("--fabric", "f.yaml", "name: x\ngenerator: fat_tree_2\nparams: {leaves: " + "9" * 5000 + "}\n"),
    ("--rules", "r.toml", "[[rule]]\nname = 'x'\nthreshold = " + "9" * 5000 + "\n"),
], ids=["yaml", "toml"])
def test_a_number_too_long_to_convert_is_one_line_naming_the_file(tmp_path, capsys, option, name, text):
    from fabricdoc.cli.main import main
    from fabricdoc.model.records import PortCounters
    from fabricdoc.sources.records import records_to_json

    fabric = tmp_path / "ok.yaml"
    fabric.write_text("name: small\ngenerator: fat_tree_2\nparams: {leaves: 2, spines: 1, hosts_per_leaf: 2}\n")
    bad = tmp_path / name
    bad.write_text(text)
    records = tmp_path / "r.json"
    records.write_text(records_to_json([PortCounters("node0001", 1, 0.0, {"SymbolErrorCounter": 0}, source="sysfs")]))
    args = ["analyze", "--fabric", str(bad if option == "--fabric" else fabric), "--records", str(records)]
    if option == "--rules":
        args += ["--rules", str(bad)]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert str(bad) in err and "internal error" not in err
    assert err.count("\n") == 1, err
