"""The task list the model keeps with ``todo_write``: read from the conversation, shown by the REPL,
re-attached after every compaction (``reattach.py``)."""
