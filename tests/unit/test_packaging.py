"""The install layout: one import name, every folder mapped, every data file shipped."""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("generators", "prompts", "verify", "audio", "masking", "perturb", "releases", "scorers")


def _setuptools():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folder(pkg: str, package_dir: dict[str, str]) -> Path:
    parts = pkg.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in package_dir:
            return ROOT / package_dir[head] / Path(*parts[n:])
    raise AssertionError(f"{pkg} is not under a mapped folder")


def test_every_stage_folder_is_a_bargein_subpackage():
    st = _setuptools()
    for stage in STAGES:
        assert st["package-dir"][f"bargein.{stage}"] == stage
        assert (ROOT / stage / "__init__.py").is_file()
        importlib.import_module(f"bargein.{stage}")
    # outside the checkout (python -m puts the cwd on sys.path), nothing but `bargein` installs
    code = ("import importlib.util, sys; "
            "print([n for n in ('audio', 'verify', 'generators', 'prompts', 'scorers') "
            "if importlib.util.find_spec(n)])")
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"top-level modules installed: {out}"


def test_every_package_folder_is_listed_and_exists():
    st = _setuptools()
    listed = set(st["packages"])
    found = set()
    for pkg_root, folder in st["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((pkg_root, *rel)))
    assert found == listed, f"unlisted: {sorted(found - listed)}; missing: {sorted(listed - found)}"


def test_every_data_file_is_package_data():
    st = _setuptools()
    data = st["package-data"]
    for pkg in st["packages"]:
        folder = _folder(pkg, st["package-dir"])
        for f in folder.iterdir():
            if f.is_file() and f.suffix not in (".py", ".pyc"):
                patterns = data.get(pkg, [])
                assert any(fnmatch.fnmatch(f.name, p) for p in patterns), \
                    f"{f.relative_to(ROOT)} would be missing from a wheel (package-data of {pkg})"
