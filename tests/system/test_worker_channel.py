"""A worker's command channel (rq's pubsub thread) and its stop signals, on a real Redis: leaving the channel never
holds a stop, and a second signal while a job is being claimed is rq's cold stop, not a crash."""

from __future__ import annotations

import signal
import threading
import time

import pytest
import redis
from narrate.worker.process.claiming import ClaimingWorker
from rq import Queue


@pytest.fixture
def worker(external_redis):
    r: redis.Redis = external_redis
    w = ClaimingWorker([Queue("narrate-test", connection=r)], connection=r, host_id="test-host")
    yield w
    if w.pubsub_thread is not None and w.pubsub_thread.is_alive():
        w.pubsub_thread.stop(timeout=0)  # a daemon thread: never wait for its read (up to 60 s)


def subscribed(worker: ClaimingWorker) -> tuple[threading.Thread, redis.client.PubSub]:
    """The worker on its command channel: its pubsub thread and its pubsub, once subscribed."""
    worker.subscribe()
    thread, pubsub = worker.pubsub_thread, worker.pubsub
    assert thread is not None and pubsub is not None
    deadline = time.monotonic() + 5
    while not pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread, pubsub


def test_leaving_the_channel_is_at_once_even_when_its_thread_read_the_reply_first(worker):
    """rq's pubsub thread waits up to 60 s for a command. The worst order: the thread reads the UNSUBSCRIBE reply and
    goes back to its 60 s wait before the worker stops it (held here: the unsubscribe returns only once the thread
    has gone back). The worker leaves within a second and the thread has ended."""
    for _ in range(3):
        thread, pubsub = subscribed(worker)
        sent = pubsub.unsubscribe
        left: list[float] = []  # when the channel was left: what follows is the wait for the thread

        def unsubscribe_then_let_the_thread_read_it(*args, _sent=sent, _pubsub=pubsub, _left=left):
            out = _sent(*args)
            until = time.monotonic() + 2
            while _pubsub.subscribed and time.monotonic() < until:  # the thread has read the reply
                time.sleep(0.01)
            time.sleep(0.2)  # and is waiting again, unless it was told to end first
            _left.append(time.monotonic())
            return out

        pubsub.unsubscribe = unsubscribe_then_let_the_thread_read_it  # type: ignore[method-assign]
        worker.unsubscribe()
        took = time.monotonic() - left[0]  # the test's own wait above, however long a busy machine makes it, apart
        assert took < 2.5, f"the wait for the channel's thread took {took:.1f} s"
        thread.join(timeout=2)
        assert not thread.is_alive()


def test_leaving_the_channel_while_its_thread_closes_the_connection_is_no_error(worker):
    """The thread, stopped as it read its SUBSCRIBE reply, closes the connection while the UNSUBSCRIBE is written
    (held here: the socket is shut as the command goes out): the write fails with a broken pipe, which left the
    worker's stop with a ConnectionError (it failed the suite once); the channel is left all the same."""
    import socket

    thread, pubsub = subscribed(worker)
    sent = pubsub.unsubscribe

    def closed_as_it_is_written(*args, _sent=sent, _pubsub=pubsub):
        _pubsub.connection._sock.shutdown(socket.SHUT_RDWR)  # as the thread's close does
        return _sent(*args)

    pubsub.unsubscribe = closed_as_it_is_written  # type: ignore[method-assign]
    started = time.monotonic()
    worker.unsubscribe()  # no error, and the stop is not held for the minute rq's thread may wait
    took = time.monotonic() - started
    assert took < 15, f"leaving the channel took {took:.1f} s"  # redis-py's reconnect: 0.1 s quiet, 5 s loaded
    # The thread itself may live on a while (a daemon: rq's handler pauses 2 s after the failed read, and redis-py's
    # get_message then waits for a subscription that will not come): it holds nothing and ends with the process.
    deadline = time.monotonic() + 10
    while worker.connection.pubsub_numsub(worker.pubsub_channel_name)[0][1] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.connection.pubsub_numsub(worker.pubsub_channel_name)[0][1] == 0  # no one on the channel


def test_a_second_signal_while_a_job_is_claimed_is_a_cold_stop_not_a_crash(worker):
    assert threading.current_thread() is threading.main_thread()  # signal handlers are set here
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        worker._claiming = True
        worker.request_stop(signal.SIGTERM, None)  # a stop while a job is being claimed: only noted
        assert worker._stop_requested
        worker.request_force_stop(signal.SIGTERM, None)  # within a second of the first: ignored, as rq does
        worker._shutdown_requested_date = worker._shutdown_requested_date.replace(year=2000)
        with pytest.raises(SystemExit):  # later: rq's cold stop
            worker.request_force_stop(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])
