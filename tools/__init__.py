"""Model-facing tool descriptions (data), installed as mini_letta.tool_specs."""
