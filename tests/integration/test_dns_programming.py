"""Publish after programming (issue 13, part 1) with real `dig` and real rules.

A netbed node runs switchboard in iptables mode (libiptc), answering DNS on
the kube-dns ClusterIP (--dns-local-address). Every legacy x_tables writer
takes /run/xtables.lock (iptables -w, kubelet, kube-proxy, switchboard):
the test holds it, so that the daemon's syncs wait and then fail, exactly as
they do on a node where another writer hangs. With syncs held back:

- a new Service's name does not resolve (its rules are not in), the rest
  keep resolving, and the name resolves once the lock is released and its
  rules are in (checked in that order: rules are looked at after each answer);
- a deleted Service's name is NXDOMAIN while its rules are still in the
  kernel: names go before rules;
- a restarted daemon answers SERVFAIL (try again), not NXDOMAIN, until its
  first sync has been attempted.
"""
import contextlib
import fcntl
import json
import os
import re
import time

import netbed
import network_namespace
import pytest
from kube_objects import endpoint_slice, service, service_port
from netbed import pod_endpoint
from node_dns import KUBE_DNS, WEB, kube_dns_cluster, node_run, web_bed

LAYOUT = {"node-a": ["coredns", "web-1", "client"]}
NEW = "10.96.0.40"
NEW_NAME = "fresh.default.svc.cluster.local"
WEB_NAME = "web.default.svc.cluster.local"
XTABLES_LOCK = "/run/xtables.lock"


@pytest.fixture(scope="module")
def bed(root):
    with web_bed(LAYOUT) as bed:
        yield bed


@pytest.fixture
def proxy(bed, switchboard_bin):
    daemon = netbed.Switchboard(bed, switchboard_bin, "iptables", extra_args=[
        f"--dns-local-address={KUBE_DNS}",
        "--dns-upstream=127.0.0.2",  # nothing there: only cluster names are asked
    ])
    daemon.set_cluster(kube_dns_cluster(bed))
    daemon.start()
    yield daemon
    daemon.close()


def with_fresh(bed):
    """The cluster plus the Service `fresh` (its endpoint the web-1 Pod)."""
    return [*kube_dns_cluster(bed),
            service("fresh", [NEW], [service_port(80, name="http", target=8080)]),
            endpoint_slice("fresh", [pod_endpoint(bed.pods["web-1"])], [("http", 8080, "TCP")])]


@contextlib.contextmanager
def xtables_lock_held():
    """Holds the x_tables lock: the daemon's iptables syncs wait (5 s) and fail."""
    fd = os.open(XTABLES_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def ask(bed, name):
    """(status, addresses) of an A query from the client Pod to the kube-dns ClusterIP."""
    argv = ["dig", "+time=1", "+tries=1", f"@{KUBE_DNS}", name, "A"]
    out = network_namespace.run(network_namespace.in_ns(bed.pods["client"].ns, argv),
                                check=False).stdout
    status = re.search(r"status: (\w+)", out)
    addresses = re.findall(r"^[^;\s]\S*\s+\d+\s+IN\s+A\s+(\S+)$", out, re.MULTILINE)
    return (status.group(1) if status else "no answer"), addresses


def rules_for(bed, address):
    """Whether the node's legacy x_tables hold a rule naming `address`."""
    return address in node_run(bed, ["iptables-legacy-save"]).stdout


def planned(proxy, name):
    status, body = proxy.http_get(proxy.METRICS, "/debug/services")
    assert status == 200, body
    return any(s["service"] == name for s in json.loads(body)["services"])


def wait_for(what, done, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


def test_a_new_service_resolves_only_once_its_rules_are_in(bed, proxy):
    assert ask(bed, WEB_NAME) == ("NOERROR", [WEB])
    with xtables_lock_held():
        proxy.set_cluster(with_fresh(bed))
        wait_for("the plan has the new Service", lambda: planned(proxy, "fresh"))
        # The sync that would program it waits for the lock: over a second,
        # the name never resolves, and the Services already in keep answering.
        for _ in range(5):
            assert ask(bed, NEW_NAME) == ("NXDOMAIN", []), proxy.log_tail()
            assert not rules_for(bed, NEW)
            assert ask(bed, WEB_NAME) == ("NOERROR", [WEB])
            time.sleep(0.2)
    # Released: the name comes, and only after the rules.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status, addresses = ask(bed, NEW_NAME)
        if status == "NOERROR":
            assert addresses == [NEW]
            assert rules_for(bed, NEW), "the name resolved before its rules were in"
            break
        assert status == "NXDOMAIN", status
        time.sleep(0.05)
    else:
        raise AssertionError(f"{NEW_NAME} did not resolve after the sync\n{proxy.log_tail()}")
    answers = bed.probe("client", NEW, 80)
    assert [a.pod for a in answers] == ["web-1"], answers


def test_a_deleted_service_loses_its_name_before_its_rules(bed, proxy):
    proxy.set_cluster(with_fresh(bed))
    wait_for("the new Service resolves", lambda: ask(bed, NEW_NAME)[0] == "NOERROR")
    assert rules_for(bed, NEW)
    with xtables_lock_held():
        proxy.set_cluster(kube_dns_cluster(bed))
        wait_for("the plan drops the Service", lambda: not planned(proxy, "fresh"))
        # The sync that removes the rules is held back; the name is gone already.
        wait_for("the name goes", lambda: ask(bed, NEW_NAME)[0] == "NXDOMAIN", timeout=3)
        assert rules_for(bed, NEW), "the rules went first (the lock did not hold the sync)"
        assert ask(bed, WEB_NAME) == ("NOERROR", [WEB])
    wait_for("the rules go", lambda: not rules_for(bed, NEW))
    assert ask(bed, NEW_NAME)[0] == "NXDOMAIN"


def test_a_restarted_daemon_answers_from_its_warm_state_until_its_first_sync(bed, proxy):
    assert ask(bed, WEB_NAME) == ("NOERROR", [WEB])
    assert proxy.stop() == 0
    with xtables_lock_held():
        proxy.start(wait=False)
        # The rules of the previous process are still in, and so is the zone
        # it served last (the node state's warm state, docs/dns.md): the name
        # answers before this process has programmed anything.
        wait_for("the daemon answers", lambda: ask(bed, WEB_NAME)[0] != "no answer")
        assert ask(bed, WEB_NAME) == ("NOERROR", [WEB]), proxy.log_tail()
    proxy.wait_ready()
    wait_for("the name resolves again", lambda: ask(bed, WEB_NAME) == ("NOERROR", [WEB]))


def test_a_restarted_daemon_without_a_warm_state_answers_servfail_until_its_first_sync(bed, proxy):
    assert ask(bed, WEB_NAME) == ("NOERROR", [WEB])
    assert proxy.stop() == 0
    proxy.extra_args.append("--state-dir=")  # no node state: nothing to answer from
    with xtables_lock_held():
        proxy.start(wait=False)
        # The rules of the previous process are still in, but this process
        # has not programmed them: SERVFAIL (the client tries again), never
        # a negative answer it would cache.
        wait_for("the daemon answers", lambda: ask(bed, WEB_NAME)[0] != "no answer")
        assert ask(bed, WEB_NAME)[0] == "SERVFAIL", proxy.log_tail()
    proxy.wait_ready()
    wait_for("the name resolves again", lambda: ask(bed, WEB_NAME) == ("NOERROR", [WEB]))
