"""Stand-ins and synthetic inputs shared by the benchmarks and the tests, in one copy.

    scripted_llm          a scripted model behind the real SDKs (bench/generation.py, LLM tests)
    synthetic_audio       two-speaker dialogues on a known timeline (bench/timing.py, perturb tests)
    synthetic_release     small valid stage outputs to build a release from (bench/release.py, ...)
    render_convs          hand-built conversations with interruptions (bench/render.py, render tests)
    conversation_examples a clean conversation that passes every check (verifier tests)

Why here: the package ships only what users run, so these are not in it; benchmarks import only
the package and their own helpers, never ``tests/``; and the tests need the same inputs. So the
single copy sits with the benchmarks' helpers (``bench/`` is a benchmark script's first path
entry: ``from doubles.synthetic_release import write_synthetic``) and the tests reach it through
``pythonpath = ["tests", "bench"]`` in pyproject. Nothing under ``bargein/`` may import it
(tests/unit/test_layout.py checks both rules).
"""
