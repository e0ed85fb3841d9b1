"""GPU rules: NVML facts (from the NVML stand-in, the one mock: no GPU here) judged into problems and findings."""

from fabricdoc.probes.host import nvml

from fabricdoc.analysis.gpu import gpu_findings, gpu_problems
from fabricdoc.model.evidence import GpuEvidence
from tests.helpers.nvml_standin import FakeNvml


def test_faults_are_judged_problems_by_the_gpu_rules():
    g0, g1 = nvml.collect_gpus("node1", FakeNvml(), xid_wait_s=0.5, sysfs_root=None)
    assert "problems" not in g0.values  # the probe only reports facts
    assert gpu_problems(g0.values) == [
        "xid 79",
        "nvlink 1 down",
        "nvlink 1 errors: recovery 2, crc_flit 88",
        "throttled: hw_thermal_slowdown",
    ]
    assert gpu_problems(g1.values) == []
    (finding,) = gpu_findings([g0, g1])
    assert finding.kind == "gpu" and finding.name == "node1 GPU 0" and finding.severity == "error"
    assert finding.evidence_of(GpuEvidence)[0].problems[0] == "xid 79"


def test_software_throttling_is_not_a_fault():
    assert gpu_problems({"throttle_reasons": ["sw_power_cap", "gpu_idle"]}) == []


def test_a_gpu_fault_names_every_hca_of_its_host_so_the_host_is_drained():
    from fabricdoc.fabric.generators import rail_optimized
    from fabricdoc.report.drain import drain_list

    fabric = rail_optimized(units=1, hosts_per_unit=2, rails=2, spines=1)
    (g0, _g1) = nvml.collect_gpus("gpu0002", FakeNvml(), xid_wait_s=0.5, sysfs_root=None)
    (finding,) = gpu_findings([g0], fabric)
    assert finding.node_ids == ["gpu0002"]
    finding.id = "F001"
    assert [(d.node, d.findings) for d in drain_list(fabric, [finding])] == [("gpu0002", [finding.key])]
