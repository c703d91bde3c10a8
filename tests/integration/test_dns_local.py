"""Node-local DNS addresses (--dns-local-address, issue 9 point 1) with real `dig`.

A netbed node runs switchboard on a cluster file whose kube-dns Service
(ClusterIP 10.96.0.10, port 53 UDP and TCP) has its endpoint on the pod
`coredns`, where nothing listens on port 53: a query DNATed to it would get
no answer. With --dns-local-address=10.96.0.10,169.254.20.10 the daemon puts
both addresses on its own link (sb-dns0) and answers there itself, the
queries leave no conntrack entry, /debug/services leaves the kube-dns
ClusterIP out, and --cleanup removes the link and the notrack table. Both
proxy modes run it: the notrack table is the same nftables table in each.
"""
import json
import time

import netbed
import network_namespace
import pytest
from node_dns import KUBE_DNS, KUBERNETES, NODE_LOCAL, WEB, conntrack_entries, dns_entries
from node_dns import kube_dns_cluster, node_run, web_bed

LAYOUT = {"node-a": ["coredns", "web-1", "client"]}
NODE_LOCAL6 = "fd00:96::53"  # IPv6 on the port-less bridge: no DAD, bindable at once
LINK = "sb-dns0"
TABLE = "inet switchboard-dns"


@pytest.fixture(scope="module")
def bed(root):
    with web_bed(LAYOUT) as bed:
        yield bed


@pytest.fixture
def proxy(bed, mode, switchboard_bin):
    daemon = netbed.Switchboard(bed, switchboard_bin, mode, extra_args=[
        f"--dns-local-address={KUBE_DNS},{NODE_LOCAL},{NODE_LOCAL6}",
        "--dns-upstream=127.0.0.2",  # nothing there: only cluster names are asked
    ])
    daemon.set_cluster(kube_dns_cluster(bed))
    daemon.start()
    yield daemon
    daemon.close()


def dig(bed, server, name, *, tcp=False):
    argv = ["dig", "+short", "+time=2", "+tries=1", f"@{server}", name]
    if tcp:
        argv.insert(1, "+tcp")
    proc = network_namespace.run(network_namespace.in_ns(bed.pods["client"].ns, argv), check=False)
    return proc.stdout.strip()


def test_local_addresses_answer_dns_without_dnat_or_conntrack(bed, proxy):
    proxy.flush_conntrack()
    for server in (KUBE_DNS, NODE_LOCAL, NODE_LOCAL6):
        for tcp in (False, True):
            # The kube-dns endpoint has nothing on port 53: an answer is switchboard's.
            assert dig(bed, server, "kubernetes.default.svc.cluster.local", tcp=tcp) == KUBERNETES, \
                (server, tcp, proxy.log_tail())
    # The positive control: a Service still DNATs, through conntrack.
    answers = bed.probe("client", WEB, 80)
    assert [a.pod for a in answers] == ["web-1"], answers
    entries = conntrack_entries(bed)
    assert f"dst={WEB}" in entries, entries
    for address in (KUBE_DNS, NODE_LOCAL, NODE_LOCAL6):
        assert dns_entries(entries, address) == [], entries


def test_link_carries_the_addresses_and_debug_services_leaves_kube_dns_out(bed, proxy):
    shown = node_run(bed, ["ip", "-o", "addr", "show", "dev", LINK]).stdout
    for address in (f"{KUBE_DNS}/32", f"{NODE_LOCAL}/32", f"{NODE_LOCAL6}/128"):
        assert address in shown, shown
    assert "tentative" not in shown, shown
    status, body = proxy.http_get(proxy.METRICS, "/debug/services")
    assert status == 200, body
    services = {(s["namespace"], s["service"]) for s in json.loads(body)["services"]}
    assert ("default", "web") in services
    assert ("kube-system", "kube-dns") not in services, body


def test_restart_adopts_the_link_and_drops_an_address_no_longer_asked_for(bed, mode, switchboard_bin):
    first = netbed.Switchboard(bed, switchboard_bin, mode,
                               extra_args=[f"--dns-local-address={KUBE_DNS},{NODE_LOCAL}"])
    first.set_cluster(kube_dns_cluster(bed))
    try:
        first.start()
    finally:
        assert first.stop() == 0, first.log_tail()
    second = netbed.Switchboard(bed, switchboard_bin, mode,
                                extra_args=[f"--dns-local-address={NODE_LOCAL}"])
    second.start()
    try:
        shown = node_run(bed, ["ip", "-o", "addr", "show", "dev", LINK]).stdout
        assert f"{NODE_LOCAL}/32" in shown and KUBE_DNS not in shown, shown
        assert dig(bed, NODE_LOCAL, "kubernetes.default.svc.cluster.local") == KUBERNETES
    finally:
        second.close()


def test_a_restart_without_the_flag_gives_the_kube_dns_address_back_to_dnat(bed, mode,
                                                                            switchboard_bin):
    """The rollback of docs/migrating-from-coredns.md: remove the flag, restart."""
    first = netbed.Switchboard(bed, switchboard_bin, mode,
                               extra_args=[f"--dns-local-address={KUBE_DNS},{NODE_LOCAL}"])
    first.set_cluster(kube_dns_cluster(bed))
    try:
        first.start()
        assert LINK in node_run(bed, ["ip", "-o", "link", "show"]).stdout
    finally:
        assert first.stop() == 0, first.log_tail()
    second = netbed.Switchboard(bed, switchboard_bin, mode)
    second.set_cluster(kube_dns_cluster(bed))
    second.start()
    try:
        assert LINK not in node_run(bed, ["ip", "-o", "link", "show"]).stdout
        assert TABLE not in second.nft_tables()
        status, body = second.http_get(netbed.Switchboard.METRICS, "/debug/services")
        assert status == 200 and KUBE_DNS in body, body[:2000]  # DNATed again
    finally:
        second.close()


def test_a_full_sync_repairs_a_deleted_link_and_table(bed, mode, switchboard_bin):
    daemon = netbed.Switchboard(bed, switchboard_bin, mode, extra_args=[
        f"--dns-local-address={NODE_LOCAL}", "--sync-period=1s"])
    daemon.set_cluster(kube_dns_cluster(bed))
    daemon.start()
    try:
        assert node_run(bed, ["ip", "link", "del", LINK]).returncode == 0
        assert node_run(bed, ["nft", "delete", "table", *TABLE.split()]).returncode == 0
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            shown = node_run(bed, ["ip", "-o", "addr", "show", "dev", LINK]).stdout
            if f"{NODE_LOCAL}/32" in shown and TABLE in daemon.nft_tables():
                break
            time.sleep(0.2)
        else:
            pytest.fail("link or table not repaired\n" + daemon.log_tail())
        # The listener bound before the address went away serves it again.
        assert dig(bed, NODE_LOCAL, "kubernetes.default.svc.cluster.local") == KUBERNETES
    finally:
        daemon.close()


def test_cleanup_removes_the_link_and_the_notrack_table(bed, mode, switchboard_bin):
    daemon = netbed.Switchboard(bed, switchboard_bin, mode,
                                extra_args=[f"--dns-local-address={KUBE_DNS}"])
    daemon.set_cluster(kube_dns_cluster(bed))
    daemon.start()
    assert node_run(bed, ["ip", "link", "show", LINK]).returncode == 0
    assert TABLE in daemon.nft_tables()
    assert daemon.stop() == 0
    cleaned = daemon.cleanup()
    assert cleaned.returncode == 0, cleaned.stderr
    assert node_run(bed, ["ip", "link", "show", LINK]).returncode != 0
    assert TABLE not in daemon.nft_tables()
    daemon.close()


@pytest.mark.parametrize("value, why", [
    ("127.0.0.53", "loopback"), ("0.0.0.0", "unspecified"), ("224.0.0.251", "multicast"),
    ("fe80::1", "link-local"), ("10.96.0.10,10.96.0.10", "twice"), ("10.96.0.300", "not an IP"),
    (",".join(f"10.96.0.{i}" for i in range(1, 10)), "at most 8"),
])
def test_bad_addresses_exit_2_with_one_line(switchboard_bin, value, why):
    proc = network_namespace.run([switchboard_bin, f"--dns-local-address={value}", "--dry-run"], check=False)
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--dns-local-address" in lines[0] and why in lines[0], lines
