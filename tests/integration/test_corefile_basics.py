"""Basic Corefile behaviours of the real daemon (issue 9, point 2), one test
each, asserting what CoreDNS does with the same Corefile: kubernetes' `pods`
modes and `ttl`, the server block's `bind`, an unsupported plugin (warned,
the server runs without it), a bad Corefile (exit 2, one `PATH:LINE: why`
line), and `loop` with a forward to ourselves or through a relay back to us.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`; loopback only: 127.0.0.0/8 is all local
there, so the daemon can bind 127.0.0.7 without adding an address).
"""
import copy
import json
import re

import pytest

import dns_stub
import kube_objects
from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import run_in
from probes import curl, wait_for

POD_IP = "10.0.0.5"  # an endpoint of db.default whose targetRef is Pod db-0


def _cluster():
    """ONE_SERVICE plus a headless Service db.default with one Pod endpoint."""
    cluster = copy.deepcopy(ONE_SERVICE)
    cluster["items"] += [
        kube_objects.service("db", [], [kube_objects.service_port(5432, name="pg")]),
        kube_objects.endpoint_slice("db", [kube_objects.endpoint(POD_IP, pod="db-0")],
                                    [("pg", 5432, "TCP")]),
    ]
    return cluster


def query(namespace, name, *, server="127.0.0.1", qtype="A"):
    """(status, [(name, ttl, type, rdata)] of the answer); status None when
    nothing answered."""
    out = run_in(namespace, "dig", "+noall", "+comments", "+answer", "+time=2", "+tries=1",
                 f"@{server}", name, qtype).stdout
    match = re.search(r"status: (\w+)", out)
    answers = []
    for line in out.splitlines():
        fields = line.split(None, 4)
        if line and not line.startswith(";") and len(fields) == 5:
            answers.append((fields[0], int(fields[1]), fields[3], fields[4]))
    return (match.group(1) if match else None), answers


def web_answers(namespace, server="127.0.0.1"):
    status, answers = query(namespace, "web.default.svc.cluster.local", server=server)
    return status == "NOERROR" and [rdata for *_, rdata in answers] == ["10.96.0.10"]


@pytest.fixture
def node(switchboard_bin, netns, tmp_path):
    """start(corefile, server=...) writes the Corefile, starts the daemon and
    waits until `server` answers the cluster zone; returns the log's path.
    Processes started by the test go in the returned list too."""
    (tmp_path / "cluster.json").write_text(json.dumps(_cluster()))
    processes = []

    def start(corefile, server="127.0.0.1"):
        (tmp_path / "Corefile").write_text(corefile)
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        daemon = processes[-1]
        wait_for(lambda: daemon.poll() is not None or web_answers(netns, server),
                 f"the cluster zone answered on {server}; log: {log_path}")
        assert daemon.poll() is None, log_path.read_text()
        return log_path

    try:
        yield netns, tmp_path, start, processes
    finally:
        stop_processes(processes)


def kubernetes_block(options=""):
    inner = f" {{\n{options}    }}" if options else ""
    return (".:53 {\n    bind 127.0.0.1\n"
            f"    kubernetes cluster.local in-addr.arpa ip6.arpa{inner}\n}}\n")


POD_NAME = "10-0-0-5.default.pod.cluster.local"


def test_pods_disabled_is_the_default_and_answers_no_pod_names(node):
    netns, _, start, _ = node
    start(kubernetes_block())
    status, answers = query(netns, POD_NAME)
    assert (status, answers) == ("NXDOMAIN", [])
    assert query(netns, "10-1-2-3.default.pod.cluster.local")[0] == "NXDOMAIN"


def test_pods_insecure_answers_any_dashed_address_in_any_namespace(node):
    netns, _, start, _ = node
    start(kubernetes_block("        pods insecure\n"))
    assert query(netns, POD_NAME) == ("NOERROR", [(POD_NAME + ".", 5, "A", POD_IP)])
    # Not an endpoint anywhere, in a namespace that has nothing: still answered.
    assert query(netns, "10-1-2-3.nowhere.pod.cluster.local")[1][0][3] == "10.1.2.3"
    assert query(netns, "not-an-address.default.pod.cluster.local")[0] == "NXDOMAIN"


def test_pods_verified_answers_only_pod_endpoints_of_that_namespace(node):
    netns, _, start, _ = node
    start(kubernetes_block("        pods verified\n"))
    assert query(netns, POD_NAME) == ("NOERROR", [(POD_NAME + ".", 5, "A", POD_IP)])
    # The same address in another namespace, and an address no Pod has.
    assert query(netns, "10-0-0-5.kube-system.pod.cluster.local")[0] == "NXDOMAIN"
    assert query(netns, "10-0-0-6.default.pod.cluster.local")[0] == "NXDOMAIN"
    # A ClusterIP is not a Pod's address.
    assert query(netns, "10-96-0-10.default.pod.cluster.local")[0] == "NXDOMAIN"


def test_kubernetes_ttl_sets_the_answers_ttl_and_defaults_to_5(node):
    netns, _, start, processes = node
    start(kubernetes_block())
    assert query(netns, "web.default.svc.cluster.local")[1] == [
        ("web.default.svc.cluster.local.", 5, "A", "10.96.0.10")]
    processes[-1].kill()
    processes[-1].wait(timeout=30)
    start(kubernetes_block("        ttl 17\n"))
    assert query(netns, "web.default.svc.cluster.local")[1] == [
        ("web.default.svc.cluster.local.", 17, "A", "10.96.0.10")]
    assert query(netns, "db.default.svc.cluster.local")[1] == [
        ("db.default.svc.cluster.local.", 17, "A", POD_IP)]


def test_bind_serves_on_its_address_only(node):
    netns, _, start, _ = node
    start(kubernetes_block().replace("bind 127.0.0.1", "bind 127.0.0.7"), server="127.0.0.7")
    assert query(netns, "web.default.svc.cluster.local", server="127.0.0.7")[0] == "NOERROR"
    for other in ("127.0.0.1", "127.0.0.8"):
        assert query(netns, "web.default.svc.cluster.local", server=other) == (None, [])
    listening = run_in(netns, "ss", "-Hlnu").stdout
    assert "127.0.0.7:53" in listening
    assert not re.search(r"(0\.0\.0\.0|\*|\[::\]|127\.0\.0\.1):53\b", listening), listening


def test_unsupported_plugins_are_warned_once_and_the_server_runs_without_them(node):
    netns, tmp_path, start, _ = node
    corefile = """\
.:53 {
    bind 127.0.0.1
    rewrite name foo.default.svc.cluster.local web.default.svc.cluster.local
    template IN A example.test {
        answer "{{ .Name }} 60 IN A 192.0.2.1"
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa
}
other.test:53 {
    rewrite name a.other.test b.other.test
    forward . 127.0.0.2
}
"""
    log_path = start(corefile)
    path = tmp_path / "Corefile"
    text = log_path.read_text()
    rewrite = f'{path}:3: plugin "rewrite" is not supported; the server runs without it'
    template = f'{path}:4: plugin "template" is not supported; the server runs without it'
    assert text.count(rewrite) == 1, text
    assert text.count(template) == 1, text
    # Warned at its first use only: not again for other.test's rewrite.
    assert text.count('plugin "rewrite"') == 1, text
    # Without rewrite the alias does not exist, without template nothing answers for it.
    assert query(netns, "foo.default.svc.cluster.local")[0] == "NXDOMAIN"
    assert query(netns, "x.example.test")[1] == []
    assert query(netns, "web.default.svc.cluster.local")[0] == "NOERROR"


def test_several_rewrite_lines_in_a_block_are_accepted_as_coredns_does(node):
    _, _, start, _ = node
    start(kubernetes_block().replace(
        "    kubernetes", "    rewrite name a.example b.example\n"
                         "    rewrite name c.example d.example\n    kubernetes"))


def run_to_exit(switchboard_bin, netns, tmp_path, corefile):
    path = tmp_path / "Corefile"
    path.write_text(corefile)
    return run_in(netns, switchboard_bin, f"--source=file:{tmp_path / 'cluster.json'}",
                  "--hostname-override=node-a", f"--dns-corefile={path}")


@pytest.mark.parametrize("corefile, line, why", [
    (kubernetes_block("        ttl 9999\n"), 4, "ttl: 9999 is out of range 0-3600"),
    # kubernetes' `{` is closed on line 5: the server block's, on line 1, never is.
    (".:53 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        ttl 5\n    }\n", 1,
     "unexpected end of file: this '{' is never closed"),
    (kubernetes_block("        pods sometimes\n"), 4,
     'pods: "sometimes" is not one of disabled, insecure, verified'),
    (kubernetes_block().replace("    kubernetes", "    bogus\n    kubernetes"), 3,
     'unknown directive "bogus"'),
], ids=["ttl-out-of-range", "unclosed-brace", "bad-pods-mode", "unknown-directive"])
def test_a_bad_corefile_exits_2_with_one_path_line_why_line(switchboard_bin, netns, tmp_path,
                                                            corefile, line, why):
    (tmp_path / "cluster.json").write_text(json.dumps(_cluster()))
    result = run_to_exit(switchboard_bin, netns, tmp_path, corefile)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"switchboard: {tmp_path / 'Corefile'}:{line}: {why}"], result.stderr


def dns_requests(netns):
    status, text = curl(netns, "http://127.0.0.1:9153/metrics")
    assert status == 200
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("coredns_dns_requests_total{"))


LOOP_COREFILE = """\
.:53 {{
    bind 127.0.0.1
    loop
    prometheus 127.0.0.1:9153
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . {upstream}
}}
"""


def assert_refused_without_spinning(netns):
    before = dns_requests(netns)
    for name in ("www.example.com", "a.example.org", "1.0.0.192.in-addr.arpa"):
        qtype = "PTR" if name.endswith(".arpa") else "A"
        assert query(netns, name, qtype=qtype) == ("REFUSED", [])
    assert query(netns, "web.default.svc.cluster.local")[0] == "NOERROR"
    # Each of our queries reached the server once: nothing went round.
    assert dns_requests(netns) - before == 4


def test_loop_forward_to_ourselves_drops_the_upstream_and_refuses_outside_names(node):
    netns, _, start, _ = node
    log_path = start(LOOP_COREFILE.format(upstream="127.0.0.1"))
    wait_for(lambda: "forwarding loop" in log_path.read_text(), "the loop logged")
    text = log_path.read_text()
    assert text.count("dropping upstream 127.0.0.1:53: it is our own listen address "
                      "127.0.0.1:53 (a forwarding loop)") == 1, text
    assert_refused_without_spinning(netns)


def test_loop_through_a_relay_is_caught_by_the_probe_and_outside_names_are_refused(node,
                                                                                    dns_stubs):
    netns, tmp_path, start, processes = node
    relay = "127.0.0.3"
    # A forwarder that relays every query to 127.0.0.1:53 and back: a loop
    # through another server (a node's 127.0.0.53).
    relaying = dns_stubs(netns, relay, dns_stub.relay(timeout=1))
    log_path = start(LOOP_COREFILE.format(upstream=relay))
    wait_for(lambda: "loop probe came back" in log_path.read_text(), f"the loop; log: {log_path}")
    text = log_path.read_text()
    assert text.count(f"dropping upstream {relay}:53: our loop probe came back to us "
                      "(a forwarding loop)") == 1, text
    assert_refused_without_spinning(netns)
    # The relay saw the probe and nothing else: no query was sent round.
    assert len(relaying.names(probes=True)) == 1
    assert relaying.names() == []
