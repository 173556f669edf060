"""Integrations with other tools: the pytest plugin (entry point ``pytest11``)."""
