"""The Corefile's hosts plugin, kubernetes' fallthrough, endpoint_pod_names and
noendpoints, and loadbalance (issue 9, point 2), each changing what the
daemon answers.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`). The daemon serves 127.0.0.1:53 there; a fake upstream
(dns_stub) on 127.0.0.2 answers every A question with its own address and
logs the names it was asked.
"""
import contextlib
import json
import os
import re
import subprocess

import pytest

from kube_objects import cluster_list, endpoint, endpoint_slice, service, service_port
from network_namespace import in_ns, run_in
from probes import free_port, http_get, wait_for

UPSTREAM = "127.0.0.2"


def _headless(name, endpoints):
    return [service(name, [], [service_port(80, name="http")]),
            endpoint_slice(name, endpoints)]


# web: a ClusterIP Service; nginx: headless, web-0 with a hostname and a Pod
# endpoint without one; many: headless with eight endpoints (for shuffling).
CLUSTER = cluster_list([
    service("web", ["10.96.0.10"], [service_port(80, name="http", target=8080)]),
    *_headless("nginx", [endpoint("10.0.0.1", hostname="web-0", pod="web-0"),
                         endpoint("10.0.0.2", pod="pod-b")]),
    *_headless("many", [endpoint(f"10.0.1.{i}") for i in range(1, 9)]),
])


@pytest.fixture
def bed(switchboard_bin, netns, dns_stubs, tmp_path):
    """start(corefile) runs the daemon with that Corefile (one at a time)."""
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    upstream = dns_stubs(netns, UPSTREAM)

    @contextlib.contextmanager
    def start(corefile):
        (tmp_path / "Corefile").write_text(corefile)
        log_path = tmp_path / "daemon.log"
        with open(log_path, "w") as log:
            daemon = subprocess.Popen(
                in_ns(netns, [switchboard_bin, f"--source=file:{tmp_path / 'cluster.json'}",
                              "--hostname-override=node-a",
                              f"--dns-corefile={tmp_path / 'Corefile'}"]),
                stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for(lambda: dig(netns, "web.default.svc.cluster.local") == "10.96.0.10",
                     f"the cluster zone answered; log: {log_path}")
            yield log_path
        finally:
            if daemon.poll() is None:
                daemon.kill()
            daemon.wait(timeout=30)

    return netns, tmp_path, upstream, start


def dig(namespace, *args):
    result = run_in(namespace, "dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", *args)
    return result.stdout.strip()


def dig_full(namespace, *args):
    """(status, flags, answer lines) of one query."""
    result = run_in(namespace, "dig", "+noall", "+comments", "+answer", "+time=2", "+tries=1",
                    "@127.0.0.1", *args)
    status = flags = ""
    answers = []
    for line in result.stdout.splitlines():
        if "status:" in line:
            status = line.split("status:")[1].split(",")[0].strip()
        elif line.startswith(";; flags:"):
            flags = line.split(";; flags:")[1].split(";")[0].split()
        elif line and not line.startswith(";"):
            answers.append(line.split())
    return status, flags, answers


def test_hosts_inline_lines_answer_in_their_zone_before_the_cluster_and_forwarding(bed):
    netns, tmp_path, upstream, start = bed
    corefile = f"""\
.:53 {{
    bind 127.0.0.1
    hosts {tmp_path / 'absent'} example.org {{
        192.0.2.10 inline.example.org
        ttl 90
    }}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . {UPSTREAM}
}}
"""
    with start(corefile) as log_path:
        status, flags, answers = dig_full(netns, "inline.example.org", "A")
        assert (status, answers[0][1], answers[0][4]) == ("NOERROR", "90", "192.0.2.10")
        assert "aa" in flags
        # A name with an A but asked AAAA: NODATA, as CoreDNS's hosts.
        assert dig_full(netns, "inline.example.org", "AAAA")[::2] == ("NOERROR", [])
        # A name of its zone it does not have, without fallthrough: SERVFAIL.
        assert dig_full(netns, "other.example.org", "A")[0] == "SERVFAIL"
        assert dig(netns, "-x", "192.0.2.10") == "inline.example.org."
        # Outside its zone: the cluster zone and forwarding, as without hosts.
        assert dig(netns, "www.example.com") == UPSTREAM
        assert "other.example.org" not in upstream.names()
        assert "cannot open" in log_path.read_text()


def test_hosts_file_is_reread_when_it_changes_and_falls_through(bed):
    netns, tmp_path, upstream, start = bed
    hosts = tmp_path / "NodeHosts"
    hosts.write_text("10.1.0.1 node-a\n")
    metrics = free_port()
    corefile = f"""\
.:53 {{
    bind 127.0.0.1
    prometheus 127.0.0.1:{metrics}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    hosts {hosts} {{
        ttl 60
        reload 1s
        fallthrough
    }}
    forward . {UPSTREAM}
}}
"""
    with start(corefile):
        status, _, answers = dig_full(netns, "node-a", "A")
        assert (status, answers[0][1], answers[0][4]) == ("NOERROR", "60", "10.1.0.1")
        # Replaced as a ConfigMap update does: a new file renamed over the old.
        new = tmp_path / "NodeHosts.new"
        new.write_text("10.1.0.2 node-b\n")
        os.replace(new, hosts)
        wait_for(lambda: dig(netns, "node-b") == "10.1.0.2", "the new hosts file served")
        # CoreDNS's hosts metrics: the entries, and the file's mtime at the read.
        body = http_get(netns, metrics, "/metrics")[2]
        assert "coredns_hosts_entries 1\n" in body
        stamp = re.search(r"^coredns_hosts_reload_timestamp_seconds (\S+)$", body, re.M)
        assert stamp and abs(float(stamp.group(1)) - hosts.stat().st_mtime) < 0.01
        # node-a is gone from the table: fallthrough sends it to the upstream.
        assert dig(netns, "node-a") == UPSTREAM
        assert "node-a" in upstream.names()
        assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"


def test_hosts_fallthrough_unsupported_forwards_other_types_of_its_names(bed):
    """CoreDNS 1.14's fallthrough_unsupported: a TXT question for a name in the
    table goes on to forwarding instead of NODATA; A stays the table's."""
    netns, tmp_path, upstream, start = bed
    TXT = 16

    def corefile(extra):
        return f"""\
.:53 {{
    bind 127.0.0.1
    hosts {tmp_path / 'absent'} example.org {{
        192.0.2.10 inline.example.org
        fallthrough
        {extra}
    }}
    kubernetes cluster.local
    forward . {UPSTREAM}
}}
"""
    with start(corefile("")):
        status, flags, answers = dig_full(netns, "inline.example.org", "TXT")
        assert (status, answers) == ("NOERROR", []) and "aa" in flags
        assert "inline.example.org" not in upstream.names(qtype=TXT)
    with start(corefile("fallthrough_unsupported")):
        assert dig(netns, "inline.example.org", "A") == "192.0.2.10"
        dig_full(netns, "inline.example.org", "TXT")
        assert "inline.example.org" in upstream.names(qtype=TXT)
        assert "inline.example.org" not in upstream.names(qtype=1)


def test_kubernetes_fallthrough_forwards_only_its_zones_nxdomain(bed):
    netns, tmp_path, upstream, start = bed
    corefile = f"""\
.:53 {{
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        fallthrough cluster.local
    }}
    forward . {UPSTREAM}
}}
"""
    with start(corefile):
        assert dig(netns, "nope.default.svc.cluster.local") == UPSTREAM
        assert "nope.default.svc.cluster.local" in upstream.names()
        # in-addr.arpa is the plugin's without fallthrough: authoritative NXDOMAIN.
        status, flags, _ = dig_full(netns, "-x", "10.0.0.99")
        assert status == "NXDOMAIN" and "aa" in flags
        assert "99.0.0.10.in-addr.arpa" not in upstream.names()


def test_endpoint_pod_names_names_endpoints_after_their_pod(bed):
    netns, _, _, start = bed
    corefile = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        endpoint_pod_names
    }
}
"""
    with start(corefile):
        assert dig(netns, "pod-b.nginx.default.svc.cluster.local") == "10.0.0.2"
        assert dig_full(netns, "10-0-0-2.nginx.default.svc.cluster.local")[0] == "NXDOMAIN"
        assert dig(netns, "web-0.nginx.default.svc.cluster.local") == "10.0.0.1"
        assert dig(netns, "-x", "10.0.0.2") == "pod-b.nginx.default.svc.cluster.local."


def test_noendpoints_drops_headless_services_and_endpoint_names(bed):
    netns, _, _, start = bed
    corefile = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local {
        noendpoints
    }
}
"""
    with start(corefile):
        assert dig_full(netns, "nginx.default.svc.cluster.local")[0] == "NXDOMAIN"
        assert dig_full(netns, "web-0.nginx.default.svc.cluster.local")[0] == "NXDOMAIN"
        assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"


def orders(namespace, name, count=30):
    return {dig(namespace, name) for _ in range(count)}


def test_loadbalance_shuffles_answers_only_when_configured(bed):
    netns, _, _, start = bed
    plain = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local
}
"""
    with start(plain):
        seen = orders(netns, "many.default.svc.cluster.local")
        assert len(seen) == 1
        assert len(seen.pop().split()) == 8
    with start(plain.replace("    kubernetes", "    loadbalance\n    kubernetes")):
        seen = orders(netns, "many.default.svc.cluster.local")
        assert len(seen) > 1
        assert all(sorted(order.split()) == sorted(f"10.0.1.{i}" for i in range(1, 9))
                   for order in seen)
