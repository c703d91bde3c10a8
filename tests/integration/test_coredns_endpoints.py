"""CoreDNS's serving surface from --dns-corefile (issue 9, point 3): the real
binary with a Corefile holding `health { lameduck 2s }`, `ready` and
`prometheus`, asked with curl; on SIGTERM, /health and DNS go on answering
through the lameduck.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`; loopback only).
"""
import json
import signal
import subprocess
import time

import pytest

from clusters import ONE_SERVICE
from network_namespace import in_ns, run_in
from probes import curl, sample, wait_for

LAMEDUCK_SECONDS = 2.0

COREFILE = """\
.:53 {
    bind 127.0.0.1
    errors
    health {
        lameduck 2s
    }
    ready 127.0.0.1:8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus 127.0.0.1:9153
    forward . 127.0.0.1:9
    cache 30
}
"""

@pytest.fixture
def daemon(switchboard_bin, netns, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(COREFILE)
    log_path = tmp_path / "daemon.log"
    # stderr to a file: a pipe nobody reads could fill and stall the daemon.
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            in_ns(netns, [switchboard_bin, f"--source=file:{tmp_path / 'cluster.json'}",
                          "--hostname-override=node-a", f"--dns-corefile={tmp_path / 'Corefile'}"]),
            stdout=subprocess.DEVNULL, stderr=log)
    try:
        yield process, netns, log_path
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def dig(namespace, *args):
    result = run_in(namespace, "dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", *args)
    return result.stdout.strip()


def test_ready_health_and_metrics_answer_as_corednss(daemon):
    process, netns, log_path = daemon
    wait_for(lambda: curl(netns, "http://127.0.0.1:8181/ready") == (200, "OK"),
             f"/ready 200 OK; log: {log_path}")
    # health without an address: CoreDNS's :8080, every address.
    assert curl(netns, "http://127.0.0.1:8080/health") == (200, "OK")
    assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"

    assert dig(netns, "+tcp", "web.default.svc.cluster.local") == "10.96.0.10"
    assert dig(netns, "nope.default.svc.cluster.local") == ""  # NXDOMAIN
    assert dig(netns, "+dnssec", "web.default.svc.cluster.local") == "10.96.0.10"

    status, metrics = curl(netns, "http://127.0.0.1:9153/metrics")
    assert status == 200
    # CoreDNS's labels: kubeadm's `.:53` block is server "dns://:53", zone ".".
    labels = 'server="dns://:53",zone=".",view=""'
    assert sample(metrics, f'coredns_dns_requests_total{{{labels},proto="udp",family="1",'
                           'type="A"}') == 3
    assert sample(metrics, f'coredns_dns_requests_total{{{labels},proto="tcp",family="1",'
                           'type="A"}') == 1
    assert sample(metrics, f'coredns_dns_responses_total{{{labels},rcode="NOERROR",'
                           'plugin="kubernetes"}') == 3
    assert sample(metrics, f'coredns_dns_do_requests_total{{{labels}}}') == 1
    assert sample(metrics, f'coredns_dns_responses_total{{{labels},rcode="NXDOMAIN",'
                           'plugin="kubernetes"}') == 1
    assert sample(metrics, f'coredns_dns_request_duration_seconds_count{{{labels}}}') >= 4
    assert any(line.startswith("coredns_build_info{version=") and line.endswith(" 1")
               for line in metrics.splitlines()), metrics
    # Only the DNS side: the proxy's families stay on --metrics-bind-address.
    assert "kubeproxy_" not in metrics
    # Each endpoint serves its own path only.
    assert curl(netns, "http://127.0.0.1:9153/health")[0] == 404
    assert process.poll() is None


def test_sigterm_keeps_health_and_dns_serving_through_the_lameduck(daemon):
    process, netns, log_path = daemon
    wait_for(lambda: curl(netns, "http://127.0.0.1:8181/ready") == (200, "OK"),
             f"/ready 200 OK; log: {log_path}")
    asked = time.monotonic()
    process.send_signal(signal.SIGTERM)
    # Well inside the 2 s lameduck: still answering, still running.
    assert curl(netns, "http://127.0.0.1:8080/health") == (200, "OK")
    assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"
    assert process.poll() is None, log_path.read_text()
    assert process.wait(timeout=30) == 0
    assert time.monotonic() - asked >= LAMEDUCK_SECONDS
    assert "lameduck" in log_path.read_text()
    assert curl(netns, "http://127.0.0.1:8080/health")[0] == 0
