"""The shape the code keeps: the CLI and jobs/ load no mlx, jobs/ never imports the worker side
(at import time or inside a function), only worker/ imports mlx, a module over 400 lines is a warning
(none is split only to pass a count) and one over 600 a failure, and rq internals narrate relies on are checked."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOFT_MAX_LINES = 400  # past it: a warning (split where the module holds two things, not to pass the count)
MAX_LINES = 600


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


def test_modules_stay_short():
    lines = {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines())
        for folder in ("cli", "jobs", "worker")
        for p in modules(folder)
    }
    long = {name: n for name, n in lines.items() if n > SOFT_MAX_LINES}
    if long:
        warnings.warn(f"modules over {SOFT_MAX_LINES} lines: {long}", stacklevel=1)
    assert not {name: n for name, n in long.items() if n > MAX_LINES}


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


def test_the_settings_page_table_is_the_code():
    from narrate.jobs.settings import settings_markdown

    assert settings_markdown() in (ROOT / "docs" / "settings.md").read_text()


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


# The package order: inside jobs/ each subpackage imports only the foundation (jobs/*.py) and the
# subpackages before it; worker.engine never imports worker.process or worker.bench.
JOBS_ORDER = (
    "",
    "documents",
    "cast",
    "book",
    "proof",
    "server",
    "outputs",
    "audio",
    "readalong",
    "voices",
    "feeds",
    "library",
    "queue",
    "fanout",
    "task",
    "api",
    "schedules",
    "dashboard",
    "web",
)
WORKER_ORDER = ("testkit", "engine", "process", "bench")
MAX_FOUNDATION = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "narrate." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for folder in ("cli", "jobs", "worker") for p in modules(folder)}


def arrows() -> dict[str, set[str]]:
    """Module -> the narrate modules it imports (at the top or inside a function): `from P import M`
    counts as importing P.M where M is a module, else P."""
    known = all_modules()
    graph = {}
    for name, path in known.items():
        out = set()
        for target in imported(path):
            if target in known:
                out.add(target)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    root = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{root}.{base}" if base else root
                for a in node.names:
                    if f"{base}.{a.name}" in known:
                        out.add(f"{base}.{a.name}")
                        out.discard(base) if base in known and known[base].name == "__init__.py" else None
        out.discard(name)
        graph[name] = {t for t in out if t.startswith("narrate.")}
    return graph


def rank(name: str) -> tuple[str, int] | None:
    parts = name.split(".")
    if parts[1] == "jobs":
        sub = parts[2] if len(parts) > 3 or (len(parts) == 3 and (ROOT / "jobs" / parts[2]).is_dir()) else ""
        return "jobs", JOBS_ORDER.index(sub)
    if parts[1] == "worker" and len(parts) > 2 and parts[2] in WORKER_ORDER:
        return "worker", WORKER_ORDER.index(parts[2])
    return None


def test_jobs_top_level_is_the_foundation_and_each_package_says_what_it_owns():
    top = sorted(p.name for p in (ROOT / "jobs").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_FOUNDATION, top
    subs = sorted(p.name for p in (ROOT / "jobs").iterdir() if (p / "__init__.py").exists())
    assert set(subs) == set(JOBS_ORDER[1:]), subs
    for init in sorted([*(ROOT / "jobs").rglob("__init__.py"), *(ROOT / "worker").rglob("__init__.py")]):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 30, f"{init.relative_to(ROOT)} does not say what the package owns"


def test_no_import_cycle():
    graph = arrows()
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not cycles, cycles


def test_packages_import_only_those_before_them():
    bad = []
    for name, targets in arrows().items():
        mine = rank(name)
        for t in targets:
            theirs = rank(t)
            if mine and theirs and mine[0] == theirs[0] and theirs[1] > mine[1]:
                bad.append(f"{name} -> {t}")
            if name.startswith("narrate.worker.engine") and t.startswith(
                ("narrate.worker.process", "narrate.worker.bench")
            ):
                bad.append(f"{name} -> {t}")
    assert not bad, bad


def test_the_cli_imports_the_worker_side_only_inside_commands():
    """`narrate status` and friends start without the worker side: cli/ imports narrate.worker only
    inside the functions of the commands that run it (worker, run, bench)."""
    for path in modules("cli"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            names = imported_by(node)
            assert not any(n.startswith("narrate.worker") for n in names), f"{path.name}: {names}"


def imported_by(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {node.module or ""}
    return set()


def test_job_functions_stored_in_redis_keep_their_names():
    """The function names stored in jobs' Redis hashes are the ones before the layout changed, so a
    job queued before an upgrade still runs after it (the worker maps the names, see rq_worker)."""
    from narrate.jobs.api.submit import JOB_FUNCTION
    from narrate.jobs.fanout.split import PART_FUNCTION
    from narrate.jobs.task import clip, job, part
    from narrate.jobs.voices.clips import CLIP_FUNCTION
    from narrate.worker.process.rq_worker import FUNCTIONS

    assert JOB_FUNCTION == "narrate.jobs.task.narrate_job" and PART_FUNCTION == "narrate.jobs.parts.part_job"
    assert CLIP_FUNCTION == "narrate.jobs.task.clip.clip_job"  # previews and designs (new: its own module)
    assert FUNCTIONS == {JOB_FUNCTION: job.narrate_job, PART_FUNCTION: part.part_job, CLIP_FUNCTION: clip.clip_job}


def test_chapter_files_are_named_with_the_books_own_numbers():
    from narrate.jobs.audio.layout import pieces

    spans = [(0, 10, "Opening"), (10, 20, "The Calm")]
    named = [p.name for p in pieces("b.mp3", "B", 20, spans, "chapters", None, [1, 3])]
    assert named == ["b - 01 - Opening.mp3", "b - 03 - The Calm.mp3"]
    tracks = [p.track for p in pieces("b.mp3", "B", 20, spans, "chapters", None, [1, 3])]
    assert tracks == [(1, 2), (2, 2)]  # the tracks of the files themselves
    assert [p.name for p in pieces("b.mp3", "B", 20, spans, "chapters", None, [4])][1] == "b - 02 - The Calm.mp3"


def test_every_package_is_in_the_distribution():
    """A folder of modules under cli/, jobs/ or worker/ that pyproject.toml does not list would be
    missing from a wheel (the editable install of the tests finds it anyway)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    top = {"cli": "narrate.cli", "jobs": "narrate.jobs", "worker": "narrate.worker"}
    found = {
        ".".join([top[init.relative_to(ROOT).parts[0]], *init.relative_to(ROOT).parts[1:-1]])
        for folder in top
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert found <= listed, sorted(found - listed)


def test_no_two_test_modules_share_a_name():
    """pytest imports tests/unit and tests/system as one namespace (no __init__.py): two test files of
    one name are an import error for the second ("import file mismatch")."""
    names = [p.name for folder in ("unit", "system", "bench") for p in (ROOT / "tests" / folder).glob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
