"""Every folder of the package that holds files is declared in pyproject.toml, modules or data alike:
setuptools warns, at every install, of a folder Python could import that the configuration leaves out
("Package would be ignored"), and a wheel would miss it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_folder_with_files_is_a_declared_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(config["packages"])
    found = set()
    for package, folder in config["package-dir"].items():
        for path in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if path.is_dir() and path.name != "__pycache__" and any(p.is_file() for p in path.iterdir()):
                found.add(".".join([package, *path.relative_to(ROOT / folder).parts]))
    assert found - declared == set(), f"declare these in [tool.setuptools] packages: {sorted(found - declared)}"
    data = config["package-data"]
    for package in declared:
        folder = ROOT / config["package-dir"][".".join(package.split(".")[:2])] / Path(*package.split(".")[2:])
        if not list(folder.glob("*.py")):  # a folder of data: its files are package data
            assert package in data, f"{package} holds no modules: name its files in [tool.setuptools.package-data]"
