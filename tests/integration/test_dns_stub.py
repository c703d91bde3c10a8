"""Stub domains from --dns-corefile (issue 9, point 2): server blocks besides
the kubernetes block forward their zones to their own `forward .`
upstreams, the longest zone winning; the cluster zone stays answered from
the Store.

Root: the daemon programs nftables, so it runs in a plain network namespace
this module creates and deletes; the fake upstreams listen on its loopback
(127.0.0.2 the default, 127.0.0.3 consul.local, 127.0.0.4 dc1.consul.local),
each answering every A question with its own address and logging the names.
"""
import json
import subprocess
import sys

import pytest

# The plain namespace and its helpers are test_daemon's; the one-Service
# cluster (web.default: 10.96.0.10) is test_coredns_endpoints'.
from test_coredns_endpoints import CLUSTER
from test_daemon import netns, netns_exec, wait_for  # noqa: F401 (netns is a fixture)

COREFILE = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa
    forward . 127.0.0.2
    cache 30
}
consul.local:53 {
    errors
    cache 30
    forward . 127.0.0.3
}
dc1.consul.local {
    forward . 127.0.0.4
}
svc.cluster.local:53 {
    forward . 127.0.0.3
}
"""

UPSTREAMS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")

FAKE_UPSTREAM = r'''
import socket, struct, sys
addr, log_path = sys.argv[1], sys.argv[2]
log = open(log_path, "a", buffering=1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
print("listening", flush=True)
while True:
    query, peer = s.recvfrom(4096)
    qid, flags = struct.unpack("!HH", query[:4])
    labels, pos = [], 12
    while query[pos]:
        n = query[pos]; labels.append(query[pos + 1:pos + 1 + n].decode()); pos += n + 1
    pos += 1
    qtype, = struct.unpack("!H", query[pos:pos + 2])
    log.write(".".join(labels).lower() + "\n")
    records = []
    if qtype == 1:
        records.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr))
    header = struct.pack("!HHHHHH", qid, 0x8180 | (flags & 0x0100), 1, len(records), 0, 0)
    s.sendto(header + query[12:pos + 4] + b"".join(records), peer)
'''

def start_fake_upstreams(netns, tmp_path, addresses, processes, script=FAKE_UPSTREAM):
    """Starts `script` on each address (its log: tmp_path/ADDRESS.log), appending
    the processes to `processes`; returns once each is bound."""
    for address in addresses:
        upstream = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-c", script, address,
             str(tmp_path / f"{address}.log")], stdout=subprocess.PIPE, text=True)
        processes.append(upstream)
        # Bound before the daemon starts: its loop probes go out once, at start.
        assert upstream.stdout.readline() == "listening\n"


def stop_processes(processes):
    """Kills what is still running of `processes` and reaps each."""
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def start_corefile_daemon(switchboard_bin, netns, tmp_path, processes, *, corefile=None,
                          stdout=subprocess.DEVNULL):
    """Starts the daemon in `netns` on tmp_path/cluster.json with --dns-corefile
    (tmp_path/Corefile unless `corefile`), appending it to `processes`; returns
    the path its stderr goes to (a file: a pipe nobody reads could fill and
    stall the daemon)."""
    log_path = tmp_path / "daemon.log"
    with open(log_path, "w") as log:
        processes.append(subprocess.Popen(
            ["ip", "netns", "exec", netns, str(switchboard_bin),
             f"--source=file:{tmp_path / 'cluster.json'}", "--hostname-override=node-a",
             f"--dns-corefile={corefile or tmp_path / 'Corefile'}"],
            stdout=stdout, stderr=log))
    return log_path


@pytest.fixture
def daemon(switchboard_bin, netns, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(CLUSTER))
    (tmp_path / "Corefile").write_text(COREFILE)
    processes = []
    try:
        start_fake_upstreams(netns, tmp_path, UPSTREAMS, processes)
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        yield netns, tmp_path, log_path
    finally:
        stop_processes(processes)


def dig(namespace, name):
    result = netns_exec(namespace, "dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", name)
    return result.stdout.strip()


PROBE_PREFIX = "sb-loop-"  # the forwarder's loop probes: sb-loop-<random>.<random>.<zone>


def logged(tmp_path, address):
    path = tmp_path / f"{address}.log"
    return path.read_text().split() if path.exists() else []


def asked(tmp_path, address):
    return [name for name in logged(tmp_path, address) if not name.startswith(PROBE_PREFIX)]


def test_stub_zones_go_to_their_upstreams_and_the_cluster_zone_stays_local(daemon):
    netns, tmp_path, log_path = daemon
    wait_for(lambda: dig(netns, "www.example.com") == "127.0.0.2",
             f"the default upstream's answer; log: {log_path}")
    assert dig(netns, "web.service.consul.local") == "127.0.0.3"
    assert dig(netns, "db.dc1.consul.local") == "127.0.0.4"
    assert dig(netns, "notconsul.local") == "127.0.0.2"
    # svc.cluster.local's block is inside the cluster zone: ignored, warned.
    assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"
    assert asked(tmp_path, "127.0.0.3") == ["web.service.consul.local"]
    assert asked(tmp_path, "127.0.0.4") == ["db.dc1.consul.local"]
    default = asked(tmp_path, "127.0.0.2")
    assert "notconsul.local" in default
    assert not [name for name in default if "consul.local" in name and name != "notconsul.local"]
    assert not [name for names in map(lambda a: asked(tmp_path, a), UPSTREAMS)
                for name in names if name.endswith("cluster.local")]
    assert "zone svc.cluster.local. is inside the cluster zone" in log_path.read_text()
    # Loop detection covers the stub upstreams too: each got its probe.
    for address in UPSTREAMS:
        wait_for(lambda: any(name.startswith(PROBE_PREFIX) for name in logged(tmp_path, address)),
                 f"a loop probe at {address}")
