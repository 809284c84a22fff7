"""The shape the code keeps: the CLI and jobs/ load no mlx, jobs/ never imports the worker side
(at import time or inside a function), only worker/ imports mlx, no module is over 400 lines,
and rq internals narrate relies on are checked."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Every module an import statement anywhere in the file names (relative imports resolved)."""
    package = "narrate." + ".".join(path.relative_to(ROOT).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                names.add(f"{base}.{node.module}" if node.module else base)
            else:
                names.add(node.module or "")
    return names


def test_importing_cli_and_jobs_loads_no_mlx():
    code = (
        "import sys, narrate.cli.main, narrate.jobs.api.submit, narrate.jobs.task.job,"
        " narrate.jobs.documents.documents;"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mlx', 'mlx_audio', 'pydub'});"
        "print(','.join(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""


@pytest.mark.parametrize("folder", ["jobs", "cli"])
def test_arrows_point_one_way(folder):
    """Jobs/ never imports narrate.worker or narrate.cli; nothing outside worker/ imports mlx."""
    for path in modules(folder):
        names = imported(path)
        bad = {n for n in names if n.split(".")[0] in ("mlx", "mlx_audio")}
        if folder == "jobs":
            bad |= {n for n in names if n.startswith(("narrate.worker", "narrate.cli"))}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_no_module_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for folder in ("cli", "jobs", "worker")
        for p in modules(folder)
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long


def test_a_missing_rq_internal_fails_loudly(monkeypatch):
    from narrate.jobs.queue import rq_compat
    from rq import Queue
    from rq.worker import BaseWorker

    rq_compat.check_rq_internals()  # the pinned rq has everything
    monkeypatch.delattr(Queue, "_enqueue_job")
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"Queue._enqueue_job is missing"):
        rq_compat.check_rq_internals()
    monkeypatch.undo()

    def changed(self, job, queue):  # a signature rq's main branch could give it
        return None

    monkeypatch.setattr(BaseWorker, "handle_job_failure", changed)
    with pytest.raises(rq_compat.RQInternalsChanged, match=r"handle_job_failure lacks"):
        rq_compat.check_rq_internals()


def test_readme_settings_table_is_the_code():
    from narrate.jobs.settings import settings_markdown

    assert settings_markdown() in (ROOT / "README.md").read_text()


def test_the_cli_starts_without_numpy():
    """Commands that read the queue (status, list, cancel, ...) start without numpy; what reads or
    writes audio loads it when it does."""
    code = "import sys, narrate.cli.main; print('numpy' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def _runtime_names(fn: ast.FunctionDef) -> set[str]:
    """Names a function's body reads at run time (annotations are strings: not run)."""
    names = set()
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def test_a_module_with_numpy_only_for_type_checking_imports_it_where_it_runs():
    """Where numpy is imported only for type checking (so the CLI starts without it), each function
    that uses it imports it itself: ruff cannot see a missing one (the name looks defined)."""
    for path in sorted(ROOT.glob("jobs/**/*.py")):
        tree = ast.parse(path.read_text())
        top = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        if "np" in top or "import numpy as np" not in path.read_text():
            continue
        for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            local = {a.asname or a.name for n in ast.walk(fn) if isinstance(n, ast.Import) for a in n.names}
            assert "np" not in _runtime_names(fn) or "np" in local, f"{path.name}:{fn.name} uses np, not imported"
