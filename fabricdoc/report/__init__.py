"""The report: JSON v1 and its schema, text rendering, the drain list, atomic files, the history store."""
