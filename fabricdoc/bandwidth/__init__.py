"""Planning pair tests, running them through a runner seam, and the journal of finished tests."""
