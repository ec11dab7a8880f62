"""Agent Skills: ``SKILL.md`` folders whose names and descriptions sit in the context and whose
bodies are loaded only when picked, within the budget, and brought back after a compaction.

``discovery`` finds them, ``listing`` writes the capped list, ``activation`` the body as the model
reads it, ``tool`` the ``skill`` tool, ``typed`` what the user types (``/name``, ``$name``),
``reattach`` which were invoked and what a compaction adds back; every size is in ``SETTINGS.skills`` (``mini_letta/settings.py``).
"""
