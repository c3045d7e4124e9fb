"""MCP client: import the tools of configured servers; their configuration."""
