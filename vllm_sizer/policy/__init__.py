"""Decide allow / mutate / deny for a workload and its estimate, and word the message."""
