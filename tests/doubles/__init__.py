"""Test doubles: scripted models, synthetic stage outputs and audio, hand-made conversations.

They live here, not in the package, because only tests use them (``pythonpath = ["tests"]`` in
pyproject puts this folder on the path: ``from doubles.scripted_llm import ScriptedLLM``).
Benchmarks keep their own helpers under ``bench/`` and never import from ``tests/``.
"""
