"""What faults cost: link effects, collectives (ring, tree, rails), the busbw model, what-if, job cost."""
