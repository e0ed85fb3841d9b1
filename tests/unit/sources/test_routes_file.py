"""`analyze --routes`: saved ibroute dumps (real, tests/data/ib/ibroute) become the fabric's LFTs."""

from pathlib import Path

import pytest

from fabricdoc.errors import ParseError
from fabricdoc.sources.infiniband import apply_routes_file, load_ibnetdiscover_file
from tests.helpers.paths import DATA as DATA_ROOT

DATA = str(DATA_ROOT / "ib")


@pytest.fixture
def fabric():
    return load_ibnetdiscover_file(f"{DATA}/ibnetdiscover/healthy/stdout.txt")


def routes(tmp_path, *cases):
    text = "".join(Path(f"{DATA}/ibroute/{c}/stdout.txt").read_text() for c in cases)
    path = tmp_path / "routes.txt"
    path.write_text(text)
    return path


def test_concatenated_ibroute_dumps_load_one_table_per_switch(tmp_path, fabric):
    apply_routes_file(fabric, routes(tmp_path, "leaf01", "spine01"))
    labels = sorted(fabric.label(sw) for sw in fabric.lfts)
    assert labels == ["leaf01", "spine01"]
    leaf = next(sw for sw in fabric.lfts if fabric.label(sw) == "leaf01")
    assert fabric.lfts[leaf][1] == 5  # LID 1 (spine01) leaves leaf01 through port 5, as dumped


def test_a_routes_file_cut_short_names_file_and_line(tmp_path, fabric):
    path = routes(tmp_path, "leaf01", "spine01")
    text = path.read_text()
    path.write_text(text[: text.index("Unicast lids", 10) + 40])
    with pytest.raises(ParseError) as info:
        apply_routes_file(fabric, path)
    assert str(path) in str(info.value) and info.value.line_no > 1


def test_a_file_that_is_not_ibroute_output_is_refused(tmp_path, fabric):
    path = tmp_path / "routes.txt"
    path.write_text("hello\n")
    with pytest.raises(ParseError, match="routes.txt:1: no ibroute"):
        apply_routes_file(fabric, path)
