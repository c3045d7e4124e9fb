"""MCP: import the tools of configured servers (client), serve ours (server), config."""
