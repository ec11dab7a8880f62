"""Subagents: a task run in a context window of its own, of which only the report comes back.

``definitions.py`` (a type, the built-ins), ``agent_files.py`` (one ``.md`` file), ``catalog.py``
(which types there are, trust), ``task_spec.py`` (the ``task`` tool the model sees),
``report.py`` (the report cut to the room left), ``listing.py`` (``/agents``), ``runner.py`` and
``tool.py`` (running task calls), ``child.py`` (a child agent, the ``Parent`` it sees),
``shared_tools.py`` (the parent's MCP tools in a child), ``wiring.py`` (what ``app.assemble`` is given).
"""
