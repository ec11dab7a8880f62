"""Sessions and their storage: the append-only file, its lock, the list of sessions, repairing a broken history."""
