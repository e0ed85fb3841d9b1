"""Reference fabrics and fault scenarios shipped with fabricdoc (data only)."""
