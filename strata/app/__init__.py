"""The top layer: the composition root (`compose`), the CLI, the web view, the MCP server and
`doctor`. The only place that wires adapters, cognition, the turn and memory together.
"""
