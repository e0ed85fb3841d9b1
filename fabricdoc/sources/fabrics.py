"""Every way a user names a fabric: ``demo`` (bundled), ``sim:PATH``, a YAML file, or saved ibnetdiscover output."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fabricdoc.errors import FabricdocError
from fabricdoc.fabric.fabricfile import fabric_from_yaml
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
    if spec.startswith("sim:"):
        spec = spec[4:]
    path = Path(spec)
    if not path.exists() and "/" not in spec and not spec.endswith((".yaml", ".yml")):
        path = bundled(spec)
    if path.suffix in (".yaml", ".yml"):
        return fabric_from_yaml(path)
    from fabricdoc.sources.infiniband import load_ibnetdiscover_file

    return load_ibnetdiscover_file(path), []
