"""Stub domains from --dns-corefile (issue 9, point 2): server blocks besides
the kubernetes block forward their zones to their own `forward .`
upstreams, the longest zone winning; the cluster zone stays answered from
the Store.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`); the fake upstreams (dns_stub) listen on its loopback
(127.0.0.2 the default, 127.0.0.3 consul.local, 127.0.0.4 dc1.consul.local),
each answering every A question with its own address and logging the names.
"""
import json

import pytest

from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from dns_stub import PROBE_PREFIX
from network_namespace import run_in
from probes import wait_for

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


@pytest.fixture
def daemon(switchboard_bin, netns, dns_stubs, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(COREFILE)
    # Bound before the daemon starts: its loop probes go out once, at start.
    stubs = {address: dns_stubs(netns, address) for address in UPSTREAMS}
    processes = []
    try:
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        yield netns, stubs, log_path
    finally:
        stop_processes(processes)


def dig(namespace, name):
    result = run_in(namespace, "dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", name)
    return result.stdout.strip()


def test_stub_zones_go_to_their_upstreams_and_the_cluster_zone_stays_local(daemon):
    netns, stubs, log_path = daemon
    wait_for(lambda: dig(netns, "www.example.com") == "127.0.0.2",
             f"the default upstream's answer; log: {log_path}")
    assert dig(netns, "web.service.consul.local") == "127.0.0.3"
    assert dig(netns, "db.dc1.consul.local") == "127.0.0.4"
    assert dig(netns, "notconsul.local") == "127.0.0.2"
    # svc.cluster.local's block is inside the cluster zone: ignored, warned.
    assert dig(netns, "web.default.svc.cluster.local") == "10.96.0.10"
    assert stubs["127.0.0.3"].names() == ["web.service.consul.local"]
    assert stubs["127.0.0.4"].names() == ["db.dc1.consul.local"]
    default = stubs["127.0.0.2"].names()
    assert "notconsul.local" in default
    assert not [name for name in default if "consul.local" in name and name != "notconsul.local"]
    assert not [name for names in map(lambda a: stubs[a].names(), UPSTREAMS)
                for name in names if name.endswith("cluster.local")]
    assert "zone svc.cluster.local. is inside the cluster zone" in log_path.read_text()
    # Loop detection covers the stub upstreams too: each got its probe.
    for address in UPSTREAMS:
        wait_for(lambda: any(name.startswith(PROBE_PREFIX)
                             for name in stubs[address].names(probes=True)),
                 f"a loop probe at {address}")
