"""The agent's context: system prompt, token accounting, compaction, large outputs."""
