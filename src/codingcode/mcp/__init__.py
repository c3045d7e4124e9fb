"""MCP client: import the tools of configured servers; their configuration."""

#: The names of the two built-in resource tools (``codingcode.mcp.resources``), here so a
#: front end can tell them apart without importing the MCP SDK's types.
LIST_TOOL = "mcp_list_resources"
READ_TOOL = "mcp_read_resource"
