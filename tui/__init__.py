"""The Textual app over a fabricdoc Report.

The view modules compute what is shown from the Report without importing
textual, so all of it is testable without a terminal: ``index`` (the
:class:`~fabricdoc.tui.index.ReportIndex`, built once per report),
``formatting``, ``actions``, ``rows`` (table rows), ``evidence_view``,
``detail_view``, ``overview_view``, ``impact_view`` (rich Text blocks) and
``series`` (sparkline series). ``screens/`` (one module per screen or
main-screen tab) and ``widgets/`` place it on screen; ``app`` ties them
together; styles live in ``fabricdoc.tcss``.

Every string that came from the fabric (node descriptions, host names, finding
names, evidence labels, probe errors) goes through
:func:`~fabricdoc.tui.formatting.safe`: escaped with
:func:`fabricdoc.model.text.escape` and wrapped in a Text, so it is shown as
typed and never parsed as markup (DataTable cells, Tree labels and Static
parse a plain ``str``).
"""
