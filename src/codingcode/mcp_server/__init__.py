"""The MCP server front end: ``codingcode mcp`` serves our tools (with approval and sandbox)."""
