"""The turn loop: a user turn as steps (preflight, model, tools) and what a cut reply leaves."""
