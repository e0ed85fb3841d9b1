"""`analyze --routes`: saved forwarding tables (real, tests/data/ib/: ibroute, dump_fts) become the fabric's LFTs."""

from pathlib import Path

import pytest

from fabricdoc.errors import ParseError
from fabricdoc.model.records import PortRef
from fabricdoc.sources.infiniband import (
    apply_routes_file,
    load_ibnetdiscover_file,
    read_routes_file,
)
from tests.helpers.paths import DATA as DATA_ROOT

DATA = str(DATA_ROOT / "ib")


@pytest.fixture
def fabric():
    return load_ibnetdiscover_file(f"{DATA}/ibnetdiscover/healthy/stdout.txt")


def routes(tmp_path, *cases, tool="ibroute"):
    text = "".join(Path(f"{DATA}/{tool}/{c}/stdout.txt").read_text() for c in cases)
    path = tmp_path / "routes.txt"
    path.write_text(text)
    return path


def test_concatenated_ibroute_dumps_load_one_table_per_switch(tmp_path, fabric):
    assert apply_routes_file(fabric, routes(tmp_path, "leaf01", "spine01")) == []
    labels = sorted(fabric.label(sw) for sw in fabric.lfts)
    assert labels == ["leaf01", "spine01"]
    leaf = next(sw for sw in fabric.lfts if fabric.label(sw) == "leaf01")
    assert fabric.lfts[leaf][1] == 5  # LID 1 (spine01) leaves leaf01 through port 5, as dumped


def test_dump_fts_loads_every_switch_and_paths_follow_it(tmp_path, fabric):
    apply_routes_file(fabric, routes(tmp_path, "healthy", tool="dump_fts"))
    assert len(fabric.lfts) == 6
    path = fabric.path(PortRef("0x0002c90300000001", 1), PortRef("0x0002c90300000010", 1))  # node0001 -> node0016
    assert len(path) == 4 and path[0].a == PortRef("0x0002c90200000003", 1)  # node0001 sits on leaf01 port 1


def test_ibroute_dumps_with_warnings_between_switches_give_warning_probe_runs(tmp_path, fabric):
    path = routes(tmp_path, "all_switches_stderr")
    runs = apply_routes_file(fabric, path)
    assert len(fabric.lfts) == 6
    assert [r.status for r in runs] == ["warning"] * 12
    assert runs[1].error == f"{path}:2: ibwarn: [31744] mad_rpc: _do_madrpc failed; dport (Lid 6)"
    assert [int(r.error.split(":")[1]) for r in runs[:4]] == [1, 2, 29, 30]


def test_an_fdbs_file_is_recognised_by_its_layout(tmp_path):
    path = tmp_path / "ibdiagnet2.fdbs"
    path.write_text((DATA_ROOT / "ibdiagnet2" / "real_index_fdbs_docstring_excerpt" / "ibdiagnet2.fdbs").read_text())
    (route,) = read_routes_file(path).routes
    assert route.switch_guid == "0x0002c9030068ec10" and route.lft[9] == 5


def test_a_routes_file_cut_short_names_file_and_line(tmp_path, fabric):
    path = routes(tmp_path, "leaf01", "spine01")
    text = path.read_text()
    path.write_text(text[: text.index("Unicast lids", 10) + 40] + "\n")
    with pytest.raises(ParseError) as info:
        apply_routes_file(fabric, path)
    assert str(path) in str(info.value) and info.value.line_no > 1


def test_a_file_that_is_not_ibroute_output_is_refused(tmp_path, fabric):
    path = tmp_path / "routes.txt"
    path.write_text("hello\n")
    with pytest.raises(ParseError, match="routes.txt:1: no ibroute"):
        apply_routes_file(fabric, path)


def test_a_switch_the_fabric_lacks_is_named_with_its_line(tmp_path):
    small = load_ibnetdiscover_file(f"{DATA}/ibnetdiscover/leaf_unlinked/stdout.txt")  # leaf03 is gone
    path = routes(tmp_path, "healthy", tool="dump_fts")
    with pytest.raises(ParseError, match=r"routes.txt:53: switch 0x0002c90200000005 is not in the fabric"):
        apply_routes_file(small, path)
