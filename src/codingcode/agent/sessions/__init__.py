"""Saved sessions: the append-only store, resume and fork."""
