"""Prompt texts (data), installed as mini_letta.prompts."""
