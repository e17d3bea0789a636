"""Versioned LLM price tables (YAML)."""
