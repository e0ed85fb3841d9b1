"""Every way a user names a fabric: ``demo`` (bundled), ``sim:PATH``, a YAML file, or saved ibnetdiscover output."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fabricdoc.errors import FabricdocError
from fabricdoc.fabric.fabricfile import FabricFile, read_fabric_file
from fabricdoc.fabric.faults import Fault
from fabricdoc.model.topology import Fabric


def bundled(name: str) -> Path:
    """Path of a fabric shipped in ``topologies/`` (``demo`` -> demo.yaml)."""
    root = resources.files("fabricdoc.topologies")
    for candidate in (name, f"{name}.yaml"):
        res = root / candidate
        if res.is_file():
            return Path(str(res))
    shipped = sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))
    raise FabricdocError(f"no bundled fabric {name!r} (shipped: {', '.join(shipped)})")


def load_fabric(spec: str) -> tuple[Fabric, list[Fault]]:
    """A fabric and the faults its file carries, from ``demo`` (bundled), ``sim:PATH`` or a plain
    PATH (a YAML fabric file, or a saved ``ibnetdiscover`` output / ibsim net file)."""
    loaded = load_fabric_file(spec)
    return loaded.fabric, loaded.faults


def load_fabric_file(spec: str) -> FabricFile:
    """:func:`load_fabric` with the realism of the simulator's measurements a YAML file gives
    (``measurements:``; the default, a realistic cluster, for everything else)."""
    if spec.startswith("sim:"):
        spec = spec[4:]
    path = Path(spec)
    if not path.exists() and "/" not in spec and not spec.endswith((".yaml", ".yml")):
        path = bundled(spec)
    if path.suffix in (".yaml", ".yml"):
        return read_fabric_file(path)
    from fabricdoc.sources.infiniband import load_ibnetdiscover_file

    return FabricFile(load_ibnetdiscover_file(path), [])
