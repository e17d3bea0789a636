"""Built-in build presets (YAML)."""
