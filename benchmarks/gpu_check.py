"""Exercise the real NVML calls of fabricdoc.probes.host.nvml on a GPU machine and print what came back.

Prints, per GPU, each raw NVML call fabricdoc makes with its result or NVML
error code (so a reader sees which ones the driver supports), then the
GpuHealth records as fabricdoc JSON, checked to round-trip. Without a GPU or
driver it prints one 'no NVML' line and exits 2. Usage:
  python benchmarks/gpu_check.py [--xid-wait SECONDS]
"""

from __future__ import annotations

import argparse
import socket
import sys
import time


def raw_calls(pynvml, index: int) -> list[str]:
    """Each NVML call the probe makes, called directly: 'name: result' or 'name: NVMLError(code)'."""
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    calls = [
        ("nvmlDeviceGetName", ()), ("nvmlDeviceGetUUID", ()), ("nvmlDeviceGetPciInfo", ()),
        ("nvmlDeviceGetTotalEccErrors", (1, 0)), ("nvmlDeviceGetTotalEccErrors", (0, 1)),
        ("nvmlDeviceGetRetiredPages", (1,)), ("nvmlDeviceGetRetiredPagesPendingStatus", ()),
        ("nvmlDeviceGetRemappedRows", ()), ("nvmlDeviceGetPcieReplayCounter", ()),
        ("nvmlDeviceGetCurrentClocksEventReasons", ()), ("nvmlDeviceGetNvLinkState", (0,)),
        ("nvmlDeviceGetNvLinkErrorCounter", (0, 0)),
    ]
    out = []
    for name, args in calls:
        fn = getattr(pynvml, name, None)
        if fn is None:
            out.append(f"{name}{args}: missing from this nvidia-ml-py")
            continue
        try:
            value = fn(h, *args)
            if name == "nvmlDeviceGetPciInfo":
                value = value.busId
            out.append(f"{name}{args}: {value!r}"[:200])
        except pynvml.NVMLError as exc:
            out.append(f"{name}{args}: NVMLError({getattr(exc, 'value', '?')}) {exc}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--xid-wait", type=float, default=2.0, help="seconds to listen for Xid events")
    args = ap.parse_args(argv)

    from fabricdoc.probes.host import nvml

    from fabricdoc.analysis.gpu import gpu_problems
    from fabricdoc.errors import ProbeError
    from fabricdoc.sources.records import records_from_json, records_to_json

    host = socket.gethostname()
    t0 = time.perf_counter()
    try:
        gpus = nvml.collect_gpus(host, xid_wait_s=args.xid_wait)
    except ProbeError as exc:
        print(f"gpu_check: {exc} (status {exc.status})")
        return 2
    took = time.perf_counter() - t0
    import pynvml

    pynvml.nvmlInit()
    try:
        print(f"driver {pynvml.nvmlSystemGetDriverVersion()!r}, {len(gpus)} GPU(s), "
              f"collect_gpus took {took:.2f}s (xid wait {args.xid_wait:g}s)")
        for g in gpus:
            print(f"-- GPU {g.index} raw calls")
            for line in raw_calls(pynvml, g.index):
                print("   " + line)
    finally:
        pynvml.nvmlShutdown()
    text = records_to_json(gpus, indent=2)
    print(text)
    same = records_from_json(text) == gpus
    print(f"round trip: {'ok' if same else 'MISMATCH'}; "
          f"status: {[g.status for g in gpus]}; problems: {[gpu_problems(g.values) for g in gpus]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
