"""``fabricdoc impact --isolate/--drain``: the user's own link-level what-if, and one-line errors."""

from __future__ import annotations

import json

import pytest

from fabricdoc.cli.main import main


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from fabricdoc.sweep import SweepConfig, run_sweep

    path = tmp_path_factory.mktemp("demo") / "report.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    return path


def test_isolating_the_slow_spine_cable_by_one_end_is_the_given_what_if(demo, capsys):
    assert main(["impact", str(demo), "--isolate", "spine01[2]", "--drain", "node0001", "--json"]) == 1
    given = json.loads(capsys.readouterr().out)["what_if"][0]
    assert given["choice"] == "given"
    assert given["isolate"] == [[["leaf02", 5], ["spine01", 2]]]
    assert given["drain"] == ["node0001", "node0027"] and given["hosts"] == 30
    assert given["busbw_gbps"] > 165.44


@pytest.mark.parametrize(("argv", "message"), [
    (["--isolate", "leaf02[99]"], "--isolate leaf02[99]: node 'leaf02' has no port 99"),
    (["--isolate", "leaf02"], "--isolate: expected a port like"),
    (["--drain", "nodeX"], "--drain: job host 'nodeX'"),
])
def test_a_bad_isolate_or_drain_is_one_line_naming_the_option(demo, capsys, argv, message):
    assert main(["impact", str(demo), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
