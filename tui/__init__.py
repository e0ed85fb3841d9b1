"""The Textual app over a fabricdoc Report.

``view`` computes what is shown (rows, text, series) from the Report without
importing textual; ``screens/`` (one module per screen or main-screen tab) and
``widgets/`` place it on screen; ``app`` ties them together; styles live in
``fabricdoc.tcss``.
"""
