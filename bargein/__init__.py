"""bargein: spoken-interaction benchmarks and training data for voice agents."""

__version__ = "0.1.0"
