"""Front ends for agents and scripts (`zg mcp`, `zg serve`) over the one request path the CLI uses."""
