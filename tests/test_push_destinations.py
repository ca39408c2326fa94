"""Webhook deliveries queue per destination (scheme, host, port) within each
caller's share: a dead or stalling receiver delays only its own events, a
retry waits on a timer, a destination that keeps failing is paused (the
circuit breaker, counted in stats()), and shutdown never waits on a backoff;
the delivery threads end with their server (shut down, or dropped).
Every receiver here is real, on 127.0.0.1; a "dead" one is a port on
127.0.0.1 where nothing listens."""

import gc
import socket
import threading
import time
import weakref

import a2a_min
from harness import Client, scenario_agent, user_message
from test_push_auth import wait_for
from webhook_receiver import Receiver, Tarpit


def server_with(**options):
    # The defaults that matter here stay as users get them: push_backoff 0.5 s,
    # push_retries 3, push_timeout 10 s, push_workers 4, one anonymous caller.
    return a2a_min.Server(scenario_agent, push_notifications=True,
                          push_allow=["127.0.0.1/32"], **options)


def closed_port():
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def send(client, text, url):
    return client.result("SendMessage", {"message": user_message(text), "configuration": {
        "taskPushNotificationConfig": {"url": url}}})["task"]


def test_ten_dead_webhooks_do_not_delay_the_live_one_of_the_same_caller():
    live = Receiver()
    try:
        server = server_with()
        client = Client(server)
        dead = closed_port()
        for _ in range(10):                    # 2 events each (the task, INPUT_REQUIRED)
            send(client, "wait", f"http://127.0.0.1:{dead}/hook")
        assert wait_for(lambda: server.push_stats["retried"] >= 1, timeout=5)
        started = time.monotonic()
        send(client, "x", live.url("/ok"))     # the task, WORKING, the artifact, its end
        got = live.wait(5, "/ok", timeout=5)   # (an empty chunk: lastChunk), COMPLETED
        assert len(got) == 5 and got[-1]["at"] - started < 1.0, (
            [round(r["at"] - started, 2) for r in got], server.push_stats)
        # The dead destination fails its first delivery 4 times (1 + push_retries) and the
        # second one once more: 5 in a row (push_breaker) pause it, and what waits for it
        # is dropped as "paused" rather than fill the caller's queue.
        assert wait_for(lambda: server.push_stats["paused_destinations"] == 1, timeout=10), \
            server.push_stats
        stats = server.push_stats
        assert stats["failed"] == 2 and stats["paused"] == 18 and stats["delivered"] == 5, stats
        assert server.stats()["push"]["paused_destinations"] == 1
        # While it is paused, its new events are dropped at once, and counted.
        send(client, "wait", f"http://127.0.0.1:{dead}/hook")
        assert server.push_stats["paused"] == 20
        (caller,) = server.push_stats_by_caller().values()
        assert caller["paused"] == 20 and caller["waiting"] == 0 and caller["sent"] == 5
    finally:
        live.close()


def test_ten_dead_destinations_and_a_tarpit_leave_the_live_one_within_a_second():
    live, tarpit = Receiver(), Tarpit()
    try:
        server = server_with()
        client = Client(server)
        send(client, "wait", tarpit.url("/stall"))   # holds one of the caller's two attempts
        for _ in range(10):
            send(client, "wait", f"http://127.0.0.1:{closed_port()}/hook")
        started = time.monotonic()
        send(client, "x", live.url("/ok"))
        got = live.wait(5, "/ok", timeout=5)
        assert len(got) == 5 and got[-1]["at"] - started < 1.0, (
            [round(r["at"] - started, 2) for r in got], server.push_stats)
    finally:
        live.close()
        tarpit.close()


def test_each_destination_keeps_its_events_in_order_through_retries():
    receiver = Receiver()
    try:
        server = server_with(push_backoff=0.05)
        client = Client(server)
        # /fail/2 answers 500 twice: the task's first event is retried twice, and the
        # destination's later events wait behind it, so they still arrive in order.
        send(client, "x", receiver.url("/fail/2"))
        got = receiver.wait(7, timeout=5)
        kinds = [next(iter(r["body"])) for r in got]
        assert kinds == ["task", "task", "task", "statusUpdate", "artifactUpdate",
                         "artifactUpdate", "statusUpdate"], kinds
        assert wait_for(lambda: server.push_stats["delivered"] == 5)
        assert server.push_stats["retried"] == 2
    finally:
        receiver.close()


def test_a_paused_destination_is_tried_again_after_push_pause_and_closes_on_an_answer():
    receiver = Receiver()
    try:
        server = server_with(push_retries=0, push_breaker=3, push_pause=0.5)
        client = Client(server)
        for _ in range(2):                     # 4 events to a receiver that answers 500
            send(client, "wait", receiver.url("/fail/100"))
        assert wait_for(lambda: server.push_stats["paused_destinations"] == 1, timeout=5)
        assert server.push_stats["failed"] == 3 and server.push_stats["paused"] == 1
        time.sleep(0.6)                        # the pause is over: one delivery may try
        send(client, "x", receiver.url("/ok"))
        assert len(receiver.wait(5, "/ok", timeout=5)) == 5
        assert wait_for(lambda: server.push_stats["delivered"] == 5)
        assert server.push_stats["paused_destinations"] == 0
    finally:
        receiver.close()


def test_a_4xx_answer_is_final_but_keeps_the_destination_open():
    receiver = Receiver()
    try:
        server = server_with(push_breaker=2)
        client = Client(server)
        for _ in range(3):                     # /redirect answers 302: final, never followed
            send(client, "wait", receiver.url("/redirect"))
        assert wait_for(lambda: server.push_stats["failed"] == 6)
        assert server.push_stats["paused"] == 0 and server.push_stats["paused_destinations"] == 0
    finally:
        receiver.close()


def test_shutdown_does_not_wait_on_a_backoff():
    server = server_with(push_backoff=60.0)
    client = Client(server)
    send(client, "x", f"http://127.0.0.1:{closed_port()}/hook")
    assert wait_for(lambda: server.push_stats["retried"] >= 1, timeout=5)
    started = time.monotonic()
    left = server.shutdown(grace=10.0)
    assert time.monotonic() - started < 1.0 and left["deliveries"] == 0, left


def test_shutdown_waits_for_deliveries_that_can_go():
    receiver = Receiver(stall=0.3)
    try:
        server = server_with()
        client = Client(server)
        send(client, "x", receiver.url("/stall"))   # 5 events, 0.3 s each, one at a time
        left = server.shutdown(grace=10.0)
        assert left["deliveries"] == 0 and len(receiver.requests) == 5
        assert server.push_stats["delivered"] == 5
    finally:
        receiver.close()


def push_threads():
    return {t for t in threading.enumerate() if t.name == "a2a-push"}


def test_the_delivery_threads_end_at_shutdown_and_with_a_server_dropped_without_it():
    # A thread must not keep alive what nobody else uses: a server, and every task
    # in its store. (Others' servers may hold threads of their own: these are ours.)
    receiver = Receiver()
    try:
        before = push_threads()
        server = server_with()
        send(Client(server), "x", receiver.url("/ok"))
        assert len(receiver.wait(5, "/ok")) == 5
        ours = push_threads() - before
        assert len(ours) == 4                  # push_workers
        assert server.shutdown(grace=5) == {"turns": 0, "deliveries": 0}
        assert wait_for(lambda: not any(t.is_alive() for t in ours), timeout=5)

        before = push_threads()
        server = server_with()
        client = Client(server)
        send(client, "x", receiver.url("/ok"))
        assert len(receiver.wait(10, "/ok")) == 10        # (five each)
        ours = push_threads() - before
        assert len(ours) == 4
        gone = weakref.ref(server)
        del server, client                     # (a delivery in flight holds it until answered)
        assert wait_for(lambda: gc.collect() >= 0 and gone() is None, timeout=15)
        assert wait_for(lambda: not any(t.is_alive() for t in ours), timeout=5)
    finally:
        receiver.close()
