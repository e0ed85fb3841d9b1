"""Fabric and fault files: good ones load, bad ones name file and line."""

import pytest

from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.fabric.fabricfile import faults_from_yaml
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.sources.fabrics import load_fabric


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_demo_fabric_is_bundled_with_its_faults():
    fabric, faults = load_fabric("demo")
    assert fabric.summary() == {"hosts": 32, "switches": 12, "links": 64}
    assert {f.kind for f in faults} == {"lossy", "degraded", "slow", "flapping"}


def test_listed_nodes_and_links_load(tmp_path):
    path = write(tmp_path, "f.yaml", """
name: tiny
nodes:
  - {id: sw1, kind: switch, ports: 4}
  - {id: a, kind: host, ports: 1}
  - {id: b, kind: host, ports: 1, label: "b mlx5_0"}
links:
  - {a: "sw1[1]", b: "a[1]"}
  - {a: "sw1[2]", b: "b[1]", lanes: 2, max_lanes: 4}
""")
    fabric, faults = load_fabric(str(path))
    assert fabric.summary() == {"hosts": 2, "switches": 1, "links": 2}
    assert fabric.link_at(fabric.resolve_port("b mlx5_0", 1)).lanes == 2
    assert faults == []


def test_a_link_to_an_unknown_port_names_file_and_line(tmp_path):
    path = write(tmp_path, "f.yaml", """name: tiny
nodes:
  - {id: sw1, kind: switch, ports: 4}
  - {id: a, kind: host, ports: 1}
links:
  - {a: "sw1[1]", b: "a[1]"}
  - {a: "sw1[9]", b: "a[1]"}
""")
    with pytest.raises(ConfigError, match=r"f\.yaml:7: .*has no port 9"):
        load_fabric(str(path))


def test_a_fault_naming_a_missing_switch_names_file_and_line(tmp_path):
    path = write(tmp_path, "faults.yaml", """faults:
  - {kind: lossy, port: "leaf01[3]"}
  - {kind: dead_switch, switch: spine77}
""")
    with pytest.raises(ConfigError, match=r"faults\.yaml:3: unknown node 'spine77'"):
        faults_from_yaml(path, fat_tree_2(2, 2, 2))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\ngenerator: fat_tree_2\nparams: {leaves: 2, colour: red}\n", r":3: bad params for fat_tree_2"),
        ("name: x\ngenerator: torus\n", r":1: unknown generator 'torus'"),
        ("name: x\nnodez: []\n", r":1: unknown key 'nodez'"),
        ("name: [x\n", r":2: invalid YAML"),
        ("name: x\nnodes:\n  - {id: a, kind: router, ports: 1}\n", r":3: node kind must be host or switch"),
        ("name: x\nnodes:\n  {}: 1\n", r":3: a mapping or list used as a key"),
        ("? [a, b]\n: 1\n", r":1: a mapping or list used as a key"),
        ("name: x\nnodes: []\nlinks: []\n", r":1: the fabric has no nodes"),
        ("name: x\n", r":1: the fabric has no nodes"),
    ],
)
def test_bad_fabric_files_are_one_line_with_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "f.yaml", text)
    with pytest.raises(FabricdocError, match=message) as info:
        load_fabric(str(path))
    assert str(path) in str(info.value)


def test_unknown_bundled_name_lists_what_is_shipped():
    with pytest.raises(FabricdocError, match="shipped: .*demo"):
        load_fabric("nosuchfabric")


def test_load_only_faults_take_their_flow_threshold_and_a_switch_collapse_names_its_switch(tmp_path):
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {kind: load_collapse, port: 'leaf01[3]', flows: 2, factor: 0.2}\n"
                    "  - {kind: switch_collapse, switch: spine01, flows: 4}\n")
    cable, switch = faults_from_yaml(path, fat_tree_2(2, 2, 2))
    assert (cable.kind, cable.flows, cable.factor) == ("load_collapse", 2, 0.2)
    assert (switch.kind, switch.switch, switch.flows, switch.port) == ("switch_collapse", "spine01", 4, None)
    path.write_text("faults:\n  - {kind: switch_collapse, port: 'leaf01[3]'}\n")
    with pytest.raises(ConfigError, match="switch_collapse needs 'switch'"):
        faults_from_yaml(path, fat_tree_2(2, 2, 2))


def test_a_fabric_file_sets_how_the_simulators_measurements_scatter(tmp_path):
    from fabricdoc.fabric.realism import DEFAULT
    from fabricdoc.sources.fabrics import load_fabric_file

    path = write(tmp_path, "f.yaml", """
name: noisy
generator: fat_tree_2
params: {leaves: 2, spines: 1, hosts_per_leaf: 2}
measurements:
  efficiency: {sendrecv: 0.8, alltoall: 0.7}
  half_size: 4M
  jitter: 0.04
  outlier_rate: 0.02
  outlier_factor: [0.4, 0.7]
""")
    r = load_fabric_file(str(path)).realism
    assert r.efficiency["sendrecv"] == 0.8 and r.efficiency["alltoall"] == 0.7
    assert r.efficiency["all_reduce"] == DEFAULT.efficiency["all_reduce"]  # what it leaves out keeps the default
    assert (r.half_size_bytes, r.jitter, r.outlier_rate, r.outlier_factor) == (4 << 20, 0.04, 0.02, (0.4, 0.7))
    assert r.host_variance == DEFAULT.host_variance and load_fabric_file("demo").realism == DEFAULT


@pytest.mark.parametrize(("block", "message"), [
    ("measurements: {jitter: 2}", "jitter must be a number from 0 to 0.3"),
    ("measurements: {noise: 0.1}", "unknown key 'noise' in measurements"),
    ("measurements: {efficiency: {scatter: 0.5}}", "unknown test kind 'scatter'"),
    ("measurements: {outlier_factor: [0.8, 0.3]}", "low 0.8 is above high 0.3"),
    ("measurements: {half_size: lots}", "half_size must be bytes or a size like 2M"),
    ("measurements: [0.9]", "measurements must be a mapping"),
])
def test_bad_measurement_settings_name_the_file_line_and_key(tmp_path, block, message):
    path = write(tmp_path, "f.yaml", f"name: x\ngenerator: fat_tree_2\nparams: {{leaves: 2, spines: 1}}\n{block}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_fabric(str(path))
    assert str(path) in str(err.value)
