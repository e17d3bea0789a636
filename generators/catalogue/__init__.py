"""Curated offline domain catalogue (YAML data files)."""
