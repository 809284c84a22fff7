"""One tick of a schedule: every document of the watched folder that is new, or changed since it was
narrated (by content hash), is submitted through jobs.api.submit (the same checks, output ownership and
durability as `narrate submit`).

Exactly once, with any number of schedulers: a tick is claimed with a lease (jobs/schedules/lease.py) and
counts as done only when its outcome is written, in one step with the end of the lease. A scheduler
killed mid-tick leaves the lease to expire; the next one runs the same tick again. Documents it had
submitted and recorded are not read again, and one it had submitted but not yet recorded is
submitted again with the same job id (jobs.api.submit: same document, voice, settings and output: same
job), so no document is submitted twice. The tick's writes are acknowledged only once the server
has them on disk (one durability wait for the whole tick).

What a document gets, in this order:
- unchanged signature since it was narrated (or skipped): nothing (not even read);
- modified less than NARRATE_SCHEDULE_SETTLE_S ago: waits for the next tick;
- refused (a link, not a regular file, unreadable, binary or not text, too big, an output that
  collides with another document's, or that narrate may not write): skipped and reported once, until
  it changes;
- same content as narrated (touched): nothing;
- otherwise: submitted; a changed document whose previous version's job still holds the output
  waits for the next tick.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import redis
from narrate.jobs.api import submit as api
from narrate.jobs.api.casting import cast_document
from narrate.jobs.documents.documents import title_from_name
from narrate.jobs.documents.readers import format_of, parse_bytes
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.outputs import ownership
from narrate.jobs.schedules import cron
from narrate.jobs.schedules import definitions as schedules
from narrate.jobs.schedules.definitions import Schedule, key
from narrate.jobs.schedules.lease import Lease, LeaseLost, holder
from narrate.jobs.schedules.watch import Entry, Folder, FolderUnusable, NotYet, Refused, collisions, open_folder
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.settings import Settings

log = logging.getLogger("narrate.scheduler")
LEASE_INTERVALS = 5  # a tick's lease lasts this many scheduler intervals (renewed while it runs)


class TickBusy(NarrateError):
    """Another tick of the schedule is running."""


class Interrupted(Exception):
    """The scheduler is stopping: the tick is left for the next one."""


def lease_seconds(settings: Settings) -> float:
    return LEASE_INTERVALS * settings.scheduler_interval_s


def tick_if_due(
    settings: Settings, r: redis.Redis, sched: Schedule, now: float, stop: threading.Event | None = None
) -> dict | None:
    """Run the schedule's due tick, if one is due and no other scheduler has it; its report or None."""
    last = schedules.state(r, sched.name).get("last_tick", 0.0)
    if cron.clock_went_back(now, last):
        _rewind(settings, r, sched, now)
        return None
    due = cron.due_tick(sched.cron, sched.tz, now, last)
    return None if due is None else _run(settings, r, sched, due, stop)


def run_now(settings: Settings, r: redis.Redis, name: str) -> dict:
    """A tick now (`narrate schedule run`), besides the cron ones: raises TickBusy while one runs."""
    report = _run(settings, r, schedules.get(r, name), None, None)
    assert report is not None
    return report


def _run(
    settings: Settings, r: redis.Redis, sched: Schedule, tick: float | None, stop: threading.Event | None
) -> dict | None:
    name = sched.name
    try:
        with open_folder(sched.watch) as folder:  # a host that cannot see it leaves the tick to one that can
            lease = Lease(r, key(name, "tick"), lease_seconds(settings), tick)
            if not lease.acquire():
                if tick is None:
                    raise TickBusy(_busy(r, name))
                return None
            try:
                state = schedules.state(r, name)
                if tick is not None and tick <= state.get("last_tick", 0.0):
                    lease.release()  # another scheduler finished it meanwhile
                    return None
                report = _Tick(settings, r, sched, folder, lease, stop).run(tick)
            except (Interrupted, LeaseLost):
                lease.release()
                if tick is None:
                    raise TickBusy(f"the tick of schedule {name!r} was taken over or interrupted") from None
                return None
            except BaseException:
                lease.release()
                raise
    except FolderUnusable as e:
        if tick is None:
            raise
        note_problem(r, name, str(e))
        return None
    state["runs"] = state.get("runs", 0) + 1
    state["last_run"] = report
    if tick is not None:
        state["last_tick"] = tick
    if not _finish(lease, name, state):
        log.warning("schedule %s: removed or taken over during its tick; its outcome is not recorded", name)
    log.info(
        "schedule %s: %s tick: %d submitted, %d waiting, %d newly skipped, %d unchanged",
        name,
        "manual" if tick is None else cron.show(tick, sched.tz),
        len(report["submitted"]),
        len(report["waiting"]),
        len(report["skipped_new"]),
        report["unchanged"],
    )
    return report


def _busy(r: redis.Redis, name: str) -> str:
    h = holder(r, key(name, "tick")) or {}
    since = time.strftime("%H:%M:%S", time.localtime(h.get("started", time.time())))
    return (
        f"a tick of schedule {name!r} is running (host {h.get('host', '?')}, pid {h.get('pid', '?')}, since "
        f"{since}); try again once it is done (narrate schedule list)"
    )


def note_problem(
    r: redis.Redis, name: str, reason: str, then: str | None = "its tick waits for a host that can read it"
) -> None:
    """Say once (in `schedule list` and the log) why this host cannot run the tick (a finished tick
    clears it)."""
    k = key(name, "problem")
    host = socket.gethostname()
    old = json.loads(r.get(k) or "{}")
    if old.get("reason") == reason and old.get("host") == host:
        return
    if r.hexists(schedules.SCHEDULES, name):
        r.set(k, json.dumps({"reason": reason, "host": host, "since": time.time()}))
        if then:
            log.warning("schedule %s: %s; %s", name, reason, then)


def _rewind(settings: Settings, r: redis.Redis, sched: Schedule, now: float) -> None:
    """The last tick is far ahead of the clock: it ran while a clock was wrong. The current period
    counts as done; the next tick is the next time the expression names (not that far-off time)."""
    lease = Lease(r, key(sched.name, "tick"), lease_seconds(settings), None)
    if not lease.acquire():
        return
    state = schedules.state(r, sched.name)
    last = state.get("last_tick", 0.0)
    if not cron.clock_went_back(now, last):
        lease.release()
        return
    state["last_tick"] = cron.previous_tick(sched.cron, sched.tz, now)
    state["clock_went_back"] = {"last_tick_was": last, "at": now, "host": socket.gethostname()}
    log.warning(
        "schedule %s: its last tick (%s) is ahead of this clock: the clock went back; next tick %s",
        sched.name,
        cron.show(last, sched.tz),
        cron.show(cron.next_tick(sched.cron, sched.tz, now), sched.tz),
    )
    _finish(lease, sched.name, state)


def _finish(lease: Lease, name: str, state: dict) -> bool:
    """Write the state and end the lease in one step, if the lease is still ours and the schedule exists."""
    return lease.finish(schedules.SCHEDULES, name, key(name, "state"), json.dumps(state), key(name, "problem"))


def _load(r: redis.Redis, k: str) -> dict[str, dict]:
    return {os.fsdecode(f): json.loads(v) for f, v in r.hgetall(k).items()}


class _Tick:
    def __init__(
        self,
        settings: Settings,
        r: redis.Redis,
        sched: Schedule,
        folder: Folder,
        lease: Lease,
        stop: threading.Event | None,
    ) -> None:
        self.settings = settings
        self.r, self.sched, self.folder, self.lease, self.stop = r, sched, folder, lease, stop
        self.keys = {part: key(sched.name, part) for part in ("docs", "skipped", "seen")}
        self.docs, self.skipped, self.seen = (_load(r, k) for k in self.keys.values())
        self.voice = schedules.load_voice(r, sched)
        self.cast = schedules.load_cast(r, sched)

    def run(self, tick: float | None) -> dict:
        self.report: dict = {
            "tick": tick,
            "manual": tick is None,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": time.time(),
            "submitted": [],
            "waiting": [],
            "skipped_new": [],
            "unchanged": 0,
        }
        entries, refused = self.folder.entries()
        for entry, reason in refused:
            self._skip(entry, reason)
        lost = collisions(entries)
        with durable_writes(self.r):  # one wait for everything the tick wrote
            for entry in entries:
                if self.stop is not None and self.stop.is_set():
                    raise Interrupted
                self.lease.check()
                if entry.name in lost:
                    out = f"{entry.stem}{self.sched.format}"
                    self._skip(entry, f"its output {out} would also be {lost[entry.name]}'s: rename one", "collision")
                else:
                    self._consider(entry)
            present = {e.name for e in entries} | {e.name for e, _ in refused}
            for part, known in (("skipped", self.skipped), ("seen", self.seen)):
                for name in set(known) - present:  # gone from the folder
                    self._record(name, **{part: ""})
        self.report["finished"] = time.time()
        return self.report

    def _record(self, name: str, docs: str = "-", skipped: str = "-", seen: str = "-") -> None:
        k = self.keys
        self.lease.record([k["docs"], k["skipped"], k["seen"]], os.fsencode(name), [docs, skipped, seen])

    def _wait(self, entry: Entry, reason: str) -> None:
        self.report["waiting"].append({"document": entry.shown, "reason": reason})

    def _skip(self, entry: Entry, reason: str, kind: str = "refused") -> None:
        old = self.skipped.get(entry.name)
        if old and old.get("sig") == entry.sig and old.get("reason") == reason:
            return  # reported already
        rec = {"sig": entry.sig, "reason": reason, "kind": kind, "since": time.time()}
        self._record(entry.name, skipped=json.dumps(rec), seen="")
        self.skipped[entry.name] = rec
        self.report["skipped_new"].append({"document": entry.shown, "reason": reason})
        log.warning("schedule %s: skipping %s: %s", self.sched.name, entry.shown, reason)

    def _settled(self, entry: Entry, now: float) -> bool:
        settle = self.settings.schedule_settle_s
        if now - entry.mtime >= settle:
            return True
        seen = self.seen.get(entry.name)  # a future time (another host's clock): unchanged long enough?
        return seen is not None and seen["sig"] == entry.sig and now - seen["first"] >= settle

    def _writing(self, entry: Entry) -> bool:
        """Still being written: note when it was first seen like this, and let it wait."""
        now = time.time()
        if self._settled(entry, now):
            return False
        seen = self.seen.get(entry.name)
        if seen is None or seen["sig"] != entry.sig:
            self.seen[entry.name] = {"sig": entry.sig, "first": now}
            self._record(entry.name, seen=json.dumps(self.seen[entry.name]))
        self._wait(entry, f"still being written (changed less than {self.settings.schedule_settle_s:g} s ago)")
        return True

    def _consider(self, entry: Entry) -> None:
        old = self.skipped.get(entry.name)
        if old and old.get("sig") == entry.sig and old.get("kind") != "collision":
            return  # skipped until it changes
        done = self.docs.get(entry.name)
        if done and done["sig"] == entry.sig:
            self.report["unchanged"] += 1
            return
        if self._writing(entry):
            return
        try:
            raw, entry = self.folder.read(entry)  # the entry of the file read (it may have been replaced)
        except Refused as e:
            self._skip(entry, str(e))
            return
        except NotYet as e:
            self._wait(entry, str(e))
            return
        if self._writing(entry):
            return
        sha = hashlib.sha256(raw).hexdigest()
        if done and done["sha256"] == sha:  # touched, same content: not narrated again
            self._record(entry.name, docs=json.dumps({**done, "sig": entry.sig}), seen="")
            self.report["unchanged"] += 1
            return
        self._submit(entry, raw, sha, done)

    def _submit(self, entry: Entry, raw: bytes, sha: str, done: dict | None) -> None:
        s, sched = self.settings, self.sched
        try:
            opts = sched.opts
            fmt = format_of(Path(entry.name), opts.reading.input_format)
            reading = replace(opts.reading, voicing=self.cast.reading) if self.cast else opts.reading
            doc = parse_bytes(raw, fmt, title_from_name(Path(entry.name)), entry.shown, reading)
            req = api.prepare_read(s, doc, self.voice, sched.output_for(s.output_dir, entry.stem), opts, entry.name)
            if self.cast is not None:
                c = cast_document(doc, self.cast)
                req = replace(req, cast=c.spec, cast_samples=c.samples, narrator_seed=self.cast.narrator_seed)
        except BadInput as e:
            self._skip(entry, str(e))
            return
        try:
            sub = api.submit_unacknowledged(s, self.r, req, sched.queue)
        except BadInput as e:
            pending = ownership.record(self.r, req.output).pending
            if done and pending == done.get("job"):  # its previous version is still to be narrated
                self._wait(entry, f"the job of its previous version ({pending}) still holds the output")
                return
            self._skip(entry, str(e))
            return
        final = str(s.output_dir.expanduser().resolve() / req.output)
        rec = {"sig": entry.sig, "sha256": sha, "job": sub.job.id, "output": final, "at": time.time()}
        self._record(entry.name, docs=json.dumps(rec), skipped="", seen="")
        self.docs[entry.name] = rec
        self.report["submitted"].append(
            {"document": entry.shown, "job": sub.job.id, "output": final, "duplicate": sub.duplicate}
        )
