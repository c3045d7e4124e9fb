"""Hooks: PreToolUse and the lifecycle events, their settings and handlers."""
