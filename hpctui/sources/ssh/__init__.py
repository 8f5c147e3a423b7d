"""SSH node probes: one long-lived streaming probe per node over a pooled asyncssh connection."""
