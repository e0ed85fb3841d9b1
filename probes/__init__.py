"""Everything that touches a machine: the exec seam, probe health, and pure parsers of real tool output.

Probes only collect; they never analyse. They import only :mod:`fabricdoc.model` and
:mod:`fabricdoc.errors`.
"""
