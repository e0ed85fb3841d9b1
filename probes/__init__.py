"""Everything that touches a machine: runners with timeouts and pure parsers of real tool output.

Probes only collect; they never analyse.
"""
