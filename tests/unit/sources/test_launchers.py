"""How sweeps reach hosts: argv lists for every launcher, HCAs mapped to their hosts, no shell."""

import pytest
from fabricdoc.probes.bandwidth.launch import Launcher, PairSpec

from fabricdoc.bandwidth.runner import TestSpec
from fabricdoc.errors import ConfigError, ProbeError
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.launchers import launcher_runner, pair_launcher
from fabricdoc.sources.roce import probe_argv
from fabricdoc.sweep import LauncherMeasure, SweepConfig, run_sweep


def ib_like_fabric() -> Fabric:
    """Two HCAs named as InfiniBand names them: GUID ids, "host mlx5_N" descriptions."""
    f = Fabric("ib")
    f.add_node(Node("0xsw", "switch", "leaf01", 2))
    for i, guid in enumerate(("0xaa", "0xbb"), 1):
        f.add_node(Node(guid, "host", f"gpu0{i} mlx5_0", 1, guid=guid, attrs={"host": f"gpu0{i}"}))
        f.add_link(PortRef(guid, 1), PortRef("0xsw", i))
    return f


def test_srun_and_mpirun_run_each_rank_on_the_hcas_host():
    f = ib_like_fabric()
    spec = PairSpec(src=PortRef("0xaa", 1), dst=PortRef("0xbb", 1))
    srun = pair_launcher(f, "srun").procs(spec, 60)
    assert [next(a for a in p.argv if a.startswith("--nodelist=")) for p in srun] == ["--nodelist=gpu01", "--nodelist=gpu02"]
    (mpi,) = pair_launcher(f, "mpirun").procs(spec, 60)
    assert mpi.argv[mpi.argv.index("--host") + 1] == "gpu01:1,gpu02:1"
    assert all(isinstance(a, str) for p in [*srun, mpi] for a in p.argv)


def test_a_host_name_with_shell_metacharacters_is_refused_not_run():
    f = ib_like_fabric()
    f.nodes["0xbb"].attrs["host"] = "gpu02;reboot"
    spec = PairSpec(src=PortRef("0xaa", 1), dst=PortRef("0xbb", 1))
    with pytest.raises(ProbeError):
        pair_launcher(f, "srun").procs(spec, 60)
    with pytest.raises(ProbeError):
        probe_argv(_with_host(f, "a$(id)"), "a$(id)", "srun", 5.0)


def _with_host(f: Fabric, name: str) -> Fabric:
    f.add_node(Node(name, "host", name, 1))
    return f


def test_probe_argv_names_ports_and_namespace_from_the_fabric_file():
    f = Fabric("roce")
    f.add_node(Node("h1", "host", "h1", 2, attrs={"netns": "ns-h1", "ifnames": {1: "eth0", 2: "eth1"}}))
    argv = probe_argv(f, "h1", "netns", 3.0, python="python3")
    assert argv[:3] == ["python3", "-m", "fabricdoc"]
    assert argv[argv.index("--netns") + 1] == "ns-h1"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--if-port"] == ["eth0=1", "eth1=2"]
    assert probe_argv(f, "h1", "srun", 3.0)[:4] == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=h1"]


def test_a_journal_on_a_sweep_that_runs_no_tests_is_refused():
    with pytest.raises(ConfigError, match="--journal"):
        run_sweep(SweepConfig(fabric="demo", journal="/tmp/never-written.jsonl"))


def test_nccl_tests_pairs_run_the_binary_through_mpirun_on_both_hosts():
    f = ib_like_fabric()
    launcher = pair_launcher(f, "mpirun", "/opt/nccl-tests/build/sendrecv_perf")
    spec = PairSpec(src=PortRef("0xaa", 1), dst=PortRef("0xbb", 1), program="nccl-tests", size_bytes=1 << 20)
    (proc,) = launcher.procs(spec, 60)
    assert proc.argv[:5] == ["mpirun", "-np", "2", "--host", "gpu01:1,gpu02:1"]
    assert "/opt/nccl-tests/build/sendrecv_perf" in proc.argv


class _Recording(Launcher):
    """A launcher that records the spec it was asked to start and refuses to start it."""

    def __init__(self) -> None:
        self.specs: list[PairSpec] = []

    def procs(self, spec: PairSpec, timeout_s: float):
        self.specs.append(spec)
        raise ProbeError("launch", "recording only")


def test_the_pair_runner_hands_each_test_its_fields_and_a_rendezvous_port_per_slot():
    rec = _Recording()
    run = launcher_runner(rec, base_port=31000, program="nccl-tests", test="nccl-tests:sendrecv_perf")
    result = run(TestSpec("sweep", 2, PortRef("0xaa", 1), PortRef("0xbb", 1), 200.0, slot=3))
    (spec,) = rec.specs
    assert (spec.program, spec.test, spec.port, spec.round, spec.expected_gbps) == (
        "nccl-tests", "nccl-tests:sendrecv_perf", 31003, 2, 200.0)
    assert result.status == "error" and "recording only" in result.error


def test_nccl_tests_plans_load_both_directions():
    cfg = SweepConfig(fabric="ib", launcher="mpirun", nccl_tests="/x/sendrecv_perf")
    assert LauncherMeasure(ib_like_fabric(), cfg, lambda *a: None).bidirectional is True
    assert LauncherMeasure(ib_like_fabric(), SweepConfig(fabric="ib", launcher="mpirun"),
                           lambda *a: None).bidirectional is False


def test_nccl_tests_need_mpirun():
    cfg = SweepConfig(fabric="roce", launcher="srun", nccl_tests="sendrecv_perf")
    with pytest.raises(ConfigError, match="--launcher mpirun"):
        LauncherMeasure(ib_like_fabric(), cfg, lambda *a: None)
