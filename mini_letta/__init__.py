"""mini-letta: a terminal coding agent that keeps long sessions inside the model's context window."""

__version__ = "0.1.0"
