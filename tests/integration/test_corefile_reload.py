"""The Corefile's `reload` (issue 9, point 2): a changed Corefile, swapped in
as kubelet updates a ConfigMap volume (`..data` re-pointed at a new
directory by an atomic rename), is applied while a client queries without
pause, and not one query fails or goes unanswered; a bad Corefile keeps the
running one, logs `PATH:LINE: why` and counts in coredns_reload_failed_total.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`); fake upstreams (dns_stub) listen on its loopback
(127.0.0.2 the default, 127.0.0.3 the stub domain a reload adds).
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import in_ns, run_in
from probes import free_port, http_get, python_argv, wait_for

COREFILE = """\
.:53 {{
    bind 127.0.0.1
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        ttl {ttl}
    }}
    forward . 127.0.0.2
    cache 30
    prometheus 127.0.0.1:{metrics}
    reload 2s 1s
}}
{extra}"""

CONSUL = """\
consul.local:53 {
    forward . 127.0.0.3
}
"""

# Queries one name after another over UDP, each waiting for its own reply
# (3 s at most: then it counts as lost), until 30 more queries after the
# stop file appeared (or 2 minutes passed); writes what it saw as JSON.
CLIENT = r'''
import json, os, random, socket, sys, time
import dns_wire
server, stop_path, out_path, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def first_ttl(reply):
    answers = dns_wire.answers(reply)
    return answers[0].ttl if answers else None
out = {"sent": 0, "answered": 0, "lost": 0, "failed": [], "ttls": {}}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
deadline = time.monotonic() + 120
i = 0
left = None  # queries still to send once the stop file is there
while left != 0 and time.monotonic() < deadline:
    if left is None and os.path.exists(stop_path):
        left = 30
    if left is not None:
        left -= 1
    name = names[i % len(names)]
    i += 1
    qid = random.randrange(65536)
    s.sendto(dns_wire.query(qid, name), (server, 53))
    out["sent"] += 1
    try:
        while True:
            reply = s.recv(4096)
            if dns_wire.message_id(reply) == qid:
                break
    except socket.timeout:
        out["lost"] += 1
        continue
    out["answered"] += 1
    rcode = dns_wire.rcode(reply)
    if rcode != 0:
        out["failed"].append([name, rcode])
    ttls = out["ttls"].setdefault(name, [])
    ttl = first_ttl(reply)
    if ttl not in ttls:
        ttls.append(ttl)
json.dump(out, open(out_path, "w"))
'''


def kubelet_write(config_dir, text):
    """A ConfigMap volume update as kubelet's atomic writer makes it: a new
    timestamped directory, `..data_tmp` pointing at it, renamed over `..data`
    (atomic), then the old directory removed."""
    data = config_dir / "..data"
    old = os.readlink(data) if data.is_symlink() else None
    new = config_dir / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.time_ns()}"
    new.mkdir()
    (new / "Corefile").write_text(text)
    os.symlink(new.name, config_dir / "..data_tmp")
    os.rename(config_dir / "..data_tmp", data)
    if old:
        shutil.rmtree(config_dir / old)
    else:
        os.symlink("..data/Corefile", config_dir / "Corefile")


@pytest.fixture
def daemon(switchboard_bin, netns, dns_stubs, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    config_dir = tmp_path / "coredns"
    config_dir.mkdir()
    metrics = free_port()
    kubelet_write(config_dir, COREFILE.format(ttl=5, metrics=metrics, extra=""))
    processes = []
    try:
        default = dns_stubs(netns, "127.0.0.2")
        dns_stubs(netns, "127.0.0.3")
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes,
                                         corefile=config_dir / "Corefile")
        yield netns, tmp_path, config_dir, metrics, log_path, default
    finally:
        stop_processes(processes)


def answer(namespace, name):
    """(ttl, data) of the first answer, None when there is none."""
    result = run_in(namespace, "dig", "+noall", "+answer", "+time=2", "+tries=1",
                    "@127.0.0.1", name)
    fields = result.stdout.split()
    if result.returncode != 0 or len(fields) < 5 or not fields[1].isdigit():
        return None  # not serving yet (";; communications error ...")
    return int(fields[1]), fields[4]


def metrics_text(namespace, port):
    status, _, body = http_get(namespace, port, "/metrics")
    return body if status == 200 else ""


def version_info(text):
    found = re.findall(r'^coredns_reload_version_info\{hash="sha512",value="([0-9a-f]{128})"\} 1$',
                       text, re.M)
    return found[0] if len(found) == 1 else None


def test_reload_applies_a_new_corefile_without_a_failed_query(daemon):
    netns, tmp_path, config_dir, metrics, log_path, upstream = daemon
    wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10"),
             f"the cluster zone with ttl 5; log: {log_path}")
    assert answer(netns, "web.service.consul.local")[1] == "127.0.0.2"
    before = wait_for(lambda: version_info(metrics_text(netns, metrics)), "the version info")

    stop = tmp_path / "stop-client"
    results = tmp_path / "client.json"
    client = subprocess.Popen(
        python_argv(netns, CLIENT, "127.0.0.1", stop, results, "web.default.svc.cluster.local",
                    "www.example.com", "web.service.consul.local"))
    try:
        # The client is under way before the swap.
        wait_for(lambda: "www.example.com" in upstream.names(probes=True),
                 "the client's first forwarded query")
        kubelet_write(config_dir, COREFILE.format(ttl=60, metrics=metrics, extra=CONSUL))
        wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (60, "10.96.0.10"),
                 f"the new ttl; log: {log_path}")
        wait_for(lambda: (answer(netns, "web.service.consul.local") or (0, ""))[1] == "127.0.0.3",
                 "the new stub domain")
    finally:
        # The client sends 30 more queries, on the new configuration, and ends.
        stop.write_text("")
        client.wait(timeout=30)
    seen = json.loads(results.read_text())
    assert seen["sent"] > 0 and seen["lost"] == 0 and seen["failed"] == []
    assert seen["answered"] == seen["sent"]
    # Both configurations served the client.
    assert seen["ttls"]["web.default.svc.cluster.local"] == [5, 60]
    text = metrics_text(netns, metrics)
    assert "coredns_reload_failed_total 0" in text
    assert version_info(text) not in (None, before)
    # Logged once the apply returned, which may be after the new answers
    # (the old engine is retired first).
    logged = "plugin/reload: Running configuration SHA512 = " + version_info(text)
    wait_for(lambda: logged in log_path.read_text(), f"{logged} in {log_path}")


def test_a_bad_corefile_keeps_the_running_one_and_is_logged(daemon):
    netns, tmp_path, config_dir, metrics, log_path, upstream = daemon
    wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10"),
             f"the cluster zone with ttl 5; log: {log_path}")
    bad = COREFILE.format(ttl=99999, metrics=metrics, extra="")
    kubelet_write(config_dir, bad)
    line = wait_for(
        lambda: re.search(r"Corefile changed but reload failed: (\S+):(\d+): (.*)",
                          log_path.read_text()),
        "the reload failure in the log")
    assert line.group(1) == str(config_dir / "Corefile")
    assert bad.splitlines()[int(line.group(2)) - 1].strip() == "ttl 99999"
    assert answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10")
    wait_for(lambda: "coredns_reload_failed_total 1" in metrics_text(netns, metrics),
             "the failure counted")
    # A good Corefile after the bad one is applied.
    kubelet_write(config_dir, COREFILE.format(ttl=30, metrics=metrics, extra=""))
    wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (30, "10.96.0.10"),
             "the next good Corefile")
    assert log_path.read_text().count("Corefile changed but reload failed") == 1


def test_without_reload_the_corefile_is_read_once(switchboard_bin, netns, tmp_path):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    metrics = free_port()
    corefile = tmp_path / "Corefile"
    corefile.write_text(COREFILE.format(ttl=5, metrics=metrics, extra="").replace(
        "    reload 2s 1s\n", ""))
    log_path = tmp_path / "daemon.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            in_ns(netns, [switchboard_bin, f"--source=file:{tmp_path / 'cluster.json'}",
                          "--hostname-override=node-a", f"--dns-corefile={corefile}"]),
            stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10"),
                 f"the cluster zone; log: {log_path}")
        text = metrics_text(netns, metrics)
        assert "coredns_reload_" not in text
        assert "plugin/reload" not in log_path.read_text()
    finally:
        process.kill()
        process.wait(timeout=30)


def test_reload_moves_the_coredns_endpoints(daemon):
    netns, tmp_path, config_dir, metrics, log_path, upstream = daemon
    wait_for(lambda: version_info(metrics_text(netns, metrics)), f"/metrics; log: {log_path}")
    moved, health = free_port(), free_port()
    kubelet_write(config_dir, COREFILE.format(ttl=5, metrics=moved, extra="").replace(
        "    reload 2s 1s\n", f"    reload 2s 1s\n    health 127.0.0.1:{health}\n"))
    wait_for(lambda: http_get(netns, health, "/health")[0] == 200, "/health on its new port")
    wait_for(lambda: version_info(metrics_text(netns, moved)), "/metrics on its new port")
    assert http_get(netns, metrics, "/metrics")[0] == 0  # the old listener is closed
    assert answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10")


def test_reload_moves_the_dns_listeners(daemon):
    netns, tmp_path, config_dir, metrics, log_path, upstream = daemon
    wait_for(lambda: answer(netns, "web.default.svc.cluster.local") == (5, "10.96.0.10"),
             f"the cluster zone; log: {log_path}")
    # The stub block moves along: all blocks share the kubernetes block's port.
    kubelet_write(config_dir, COREFILE.format(ttl=5, metrics=metrics, extra="").replace(
        ".:53 {", ".:5354 {").replace("bind 127.0.0.1", "bind 127.0.0.1 127.0.0.9"))

    def on(server, port):
        result = run_in(netns, "dig", "+noall", "+answer", "+time=1", "+tries=1",
                        f"@{server}", "-p", str(port), "web.default.svc.cluster.local")
        return result.returncode == 0 and "10.96.0.10" in result.stdout

    wait_for(lambda: on("127.0.0.9", 5354), f"DNS on 127.0.0.9:5354; log: {log_path}")
    assert on("127.0.0.1", 5354)
    wait_for(lambda: "dns: now listening on" in log_path.read_text(), "the old listeners closed")
    assert not on("127.0.0.1", 53)
