"""`fabricdoc probe` imports only what collecting needs (the modules loaded, not a timing)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "scipy", "networkx", "pandas", "yaml")


def _loaded(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return set(out.stdout.split())


def test_probe_command_module_loads_no_analysis_and_no_heavy_library():
    mods = _loaded("import fabricdoc.cli.probe")
    assert not {m for m in mods if m.split(".")[0] in HEAVY}
    assert not {m for m in mods if m.startswith("fabricdoc.analysis")}


def test_the_collecting_path_loads_no_analysis_and_no_heavy_library():
    mods = _loaded("import fabricdoc.cli.probe, fabricdoc.sources.host, fabricdoc.sources.records")
    assert not {m for m in mods if m.split(".")[0] in HEAVY}
    assert not {m for m in mods if m.startswith("fabricdoc.analysis")}
