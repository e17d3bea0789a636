"""What the package holds: only what users run. Test doubles live outside it, in one copy
(``bench/doubles/``, which tests and benchmarks share), benchmarks import only the package and
their own helpers, and every package module is reached from something a user runs (a command, an
entry point, a subpackage's ``__init__``), so a module that only tests import — a test double —
cannot hide in the package."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _package_modules() -> dict[str, Path]:
    """Every module the wheel installs: dotted name -> file."""
    st = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out: dict[str, Path] = {}
    for pkg in st["packages"]:
        parts = pkg.split(".")
        for n in range(len(parts), 0, -1):
            head = ".".join(parts[:n])
            if head in st["package-dir"]:
                folder = ROOT / st["package-dir"][head] / Path(*parts[n:])
                break
        for f in folder.glob("*.py"):
            out[pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"] = f
    return out


def _imports(path: Path, module: str) -> set[str]:
    """Modules ``path`` imports (top level and inside functions), plus ``"pkg.mod:attr"`` strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = module if path.stem == "__init__" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # lazy command tables and plugin lists name modules as strings
            for m in re.findall(r"\b(bargein(?:\.\w+)+)", node.value):
                out.add(m)
    return out


def _test_module_names() -> set[str]:
    """Names that resolve to something under tests/ when tests/ (or a subfolder) is on the path."""
    names = {"tests", "conftest"}
    for f in (ROOT / "tests").rglob("*.py"):
        names.add(f.stem)
    names |= {d.name for d in (ROOT / "tests").rglob("*") if d.is_dir()}
    return names - {"__init__"}


def _bench_module_names() -> set[str]:
    """Names that resolve to something under bench/ (scripts, helpers, the shared doubles)."""
    names = {"bench"} | {f.stem for f in (ROOT / "bench").glob("*.py")}
    return names | {d.name for d in (ROOT / "bench").iterdir() if (d / "__init__.py").is_file()}


def test_no_package_module_imports_tests_or_doubles():
    tests_names = _test_module_names() | _bench_module_names()
    offenders = []
    for name, path in _package_modules().items():
        text = path.read_text(encoding="utf-8")
        for imp in _imports(path, name):
            top = imp.split(".")[0]
            if top in tests_names:
                offenders.append(f"{name} imports {imp}")
        if re.search(r"sys\.path\.(insert|append)\(.*(tests|bench)", text):
            offenders.append(f"{name} puts tests/ or bench/ on sys.path")
    assert not offenders, offenders


DOUBLES = ("synthetic_release", "scripted_llm", "conversation_examples", "synthetic_audio",
           "render_convs")


def test_the_test_doubles_have_one_home_outside_the_package():
    """One copy of each double, in ``bench/doubles/``: not in the package, not again in
    ``tests/``, not again as a benchmark's private helper."""
    mods = _package_modules()
    for gone in ("bargein.releases.synthetic", "bargein.generators.scripted_llm",
                 "bargein.verify.examples", "bargein.perturb.synth"):
        assert gone not in mods, f"{gone} is a test double; it belongs in bench/doubles/"
    for here in DOUBLES:
        assert (ROOT / "bench" / "doubles" / f"{here}.py").is_file()
        copies = [p.relative_to(ROOT).as_posix() for p in [*(ROOT / "tests").rglob("*.py"),
                                                         *(ROOT / "bench").glob("*.py")]
                  if p.stem in (here, f"_{here}")]
        assert not copies, f"a second copy of the {here} double: {copies}"
    assert not (ROOT / "tests" / "doubles").exists()


def test_bench_names_on_the_test_path_shadow_nothing():
    """pytest puts ``bench/`` on the path (for ``doubles``): none of its scripts or packages may
    share a name with a standard-library or installed top-level module."""
    import importlib.metadata
    import sys

    installed: set[str] = set(sys.stdlib_module_names)
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"] == "bargein":        # its folders install as bargein.<stage>
            continue
        top = dist.read_text("top_level.txt") or ""
        installed |= {line.strip() for line in top.splitlines() if line.strip()}
        for f in dist.files or ():
            parts = f.parts
            if len(parts) == 1 and parts[0].endswith(".py"):
                installed.add(parts[0][:-3])
            elif len(parts) > 1 and parts[1] == "__init__.py":
                installed.add(parts[0])
    clashes = sorted(_bench_module_names() & installed - {"bench"})
    assert not clashes, f"bench/ names that shadow installed or stdlib modules in tests: {clashes}"


# library modules users import directly that no stage uses yet (each with its reason)
PUBLIC_LIBRARY = {
    "bargein.lexicon",      # the one word list (backchannels, fillers, openers); stages adopt it
}


def test_every_package_module_is_reached_from_what_users_run():
    """Roots: the command tree, entry points, ``bargein.testing`` (loopback servers users import in
    their own tests), every package ``__init__`` and the benchmarks (``make bench``). A module
    nothing reaches is imported by tests alone."""
    mods = _package_modules()
    graph = {name: set(_imports(path, name)) for name, path in mods.items()}
    roots = {n for n, p in mods.items() if p.stem == "__init__"}
    roots |= {n for n in mods if n.startswith(("bargein.cli.", "bargein.testing."))}
    roots |= PUBLIC_LIBRARY
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for group in [scripts.get("scripts", {}), *scripts.get("entry-points", {}).values()]:
        roots |= {target.split(":")[0] for target in group.values()}
    for b in (ROOT / "bench").glob("*.py"):
        roots |= _imports(b, f"bench.{b.stem}")
    seen, todo = set(), list(roots)
    while todo:
        n = todo.pop()
        if n in seen or n not in mods:
            continue
        seen.add(n)
        for imp in graph[n]:
            parts = imp.split(".")
            for k in range(len(parts), 0, -1):         # "pkg.mod.attr" -> "pkg.mod"
                cand = ".".join(parts[:k])
                if cand in mods:
                    todo.append(cand)
                    break
    unreached = sorted(set(mods) - seen)
    assert not unreached, (f"package modules no command, entry point or __init__ reaches "
                           f"(test-only code belongs in tests/): {unreached}")


def test_benchmarks_import_only_the_package_and_their_own_helpers():
    tests_names = _test_module_names() - {p.stem for p in (ROOT / "bench").glob("*.py")}
    offenders = []
    for path in sorted((ROOT / "bench").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"""sys\.path\.(insert|append)\(.*["']tests""", text):
            offenders.append(f"{path.name} puts tests/ on sys.path")
        for imp in _imports(path, f"bench.{path.stem}"):
            top = imp.split(".")[0]
            if top in tests_names:
                offenders.append(f"{path.name} imports {imp}")
    assert not offenders, offenders
