"""What happened: the audit of every decision and every call's outcome (below the runner; no UI)."""
