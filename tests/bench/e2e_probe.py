"""`narrate ARGS` in this process, as `python -m narrate.cli.main ARGS` runs it, with timers around its
phases, for the breakdown of tests/bench/e2e_bench.py:

    E2E_PROBE_OUT=FILE python tests/bench/e2e_probe.py run DOC --voice SAMPLE -o OUT ...

Nothing of narrate is changed: as each module named in SPANS is imported, the functions named there are
wrapped with a timer (the calls made through the module's globals or the class see the wrapper); every
module's import is timed (the seconds spent importing, nested imports counted once, per span too); each
Redis command and pipeline is counted and timed. At exit FILE gets one JSON object: each span's first
start and last end (seconds since this process started), the seconds it spent importing and the number
of calls, the first audio chunk, the imports' and Redis' totals. The timers cost microseconds a call."""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import json
import os
import runpy
import sys
import threading
import time
from typing import Any

T0 = time.time()
START = time.perf_counter()

# module -> [(attribute path, span name)]; a span's calls are summed (first start, last end)
SPANS: dict[str, list[tuple[str, str]]] = {
    "narrate.jobs.api.submit": [("prepare_many", "prepare"), ("submit", "submit")],
    "narrate.jobs.server.connection": [("Connection.open", "server_start"), ("Connection.close", "server_stop")],
    "narrate.worker.process.inprocess": [("run_in_process", "in_process"), ("remove_run_queue", "clean_up")],
    "narrate.jobs.task.job": [
        ("_narrate", "job"),
        ("make_plan", "plan"),
        ("engine_voice", "voice"),
        ("synthesize", "synthesis"),
        ("settle_cache", "settle_cache"),
    ],
    "narrate.jobs.task.stitcher": [("Stitcher.finish", "stitch_tail")],
    "narrate.jobs.task.batch_log": [("BatchLog.chunk", "chunks")],
    "narrate.worker.engine.models": [("load", "model_load")],
    "narrate.worker.engine.mlx_engine": [("MlxEngine.warm_up", "warm_up")],
}
spans: dict[str, dict[str, float]] = {}
imports = {"s": 0.0, "modules": 0}
redis_calls = {"commands": 0, "pipelines": 0, "s": 0.0}
_depth = threading.local()
_lock = threading.Lock()


def _now() -> float:
    return time.perf_counter() - START


def _timed(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t, imp = _now(), imports["s"]
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                s = spans.setdefault(name, {"start": t, "end": t, "calls": 0, "seconds": 0.0, "imports": 0.0})
                s["end"] = _now()
                s["calls"] += 1
                s["seconds"] += s["end"] - t
                s["imports"] += imports["s"] - imp

    return wrapper


def _patch(module: Any) -> None:
    for path, name in SPANS.get(module.__name__, []):
        owner, _, attr = path.rpartition(".")
        target = getattr(module, owner) if owner else module
        setattr(target, attr, _timed(name, getattr(target, attr)))
    if module.__name__ == "redis.client":
        _count_redis(module)


def _count_redis(client: Any) -> None:
    def counted(fn: Any, key: str) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with _lock:
                    redis_calls[key] += 1
                    redis_calls["s"] += time.perf_counter() - t

        return wrapper

    client.Redis.execute_command = counted(client.Redis.execute_command, "commands")
    client.Pipeline.execute = counted(client.Pipeline.execute, "pipelines")


class _Loader(importlib.abc.Loader):
    """A module's own loader, its work timed (outermost imports only: nested ones are inside them)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _time(self, fn: Any, *args: Any) -> Any:
        depth = getattr(_depth, "n", 0)
        _depth.n = depth + 1
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            _depth.n = depth
            if depth == 0:
                with _lock:
                    imports["s"] += time.perf_counter() - t

    def create_module(self, spec: Any) -> Any:
        return self._time(self.inner.create_module, spec)

    def exec_module(self, module: Any) -> None:
        self._time(self.inner.exec_module, module)
        imports["modules"] += 1
        if module.__name__ in SPANS or module.__name__ == "redis.client":
            _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def _write() -> None:
    out = os.environ.get("E2E_PROBE_OUT")
    if out:
        found = {k: {f: round(v, 4) for f, v in s.items()} for k, s in spans.items()}
        with open(out, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "t0": T0,
                    "exit_at": round(_now(), 4),
                    "spans": found,
                    "imports": {"s": round(imports["s"], 4), "modules": imports["modules"]},
                    "redis": {k: round(v, 4) for k, v in redis_calls.items()},
                },
                f,
            )


if __name__ == "__main__":
    sys.meta_path.insert(0, _Finder())
    atexit.register(_write)
    sys.argv = ["narrate", *sys.argv[1:]]
    runpy.run_module("narrate.cli.main", run_name="__main__", alter_sys=True)
