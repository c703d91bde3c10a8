"""Warm start (docs/dns.md, "Warm start"): a daemon keeps its last synced zone
in the node state folder (--state-dir), and a new one answers from it at once,
before its source has a first state, then converges to the source's truth. A
state that is corrupt, of another network namespace or missing is ignored
with one warning line, and the daemon holds its zone back (SERVFAIL) until
its first sync, as it does without one.

The "new daemon" of these tests runs on an API server that never answers
(--master to a closed port), so only the warm state can answer; DNS listens
on a loopback port of the test's namespace.
"""
import json
import pathlib
import socket
import subprocess

import network_namespace
from daemons import terminate
from kube_objects import cluster_list, endpoint, endpoint_slice, service, service_port
from network_namespace import run_in
from probes import free_port, metric, wait_for

NO_API_SERVER = ("--source=kubernetes", "--master=https://127.0.0.1:9")


def write_cluster(path, *names):
    """A file source with one ClusterIP Service per name, each with one ready endpoint."""
    items = []
    for index, name in enumerate(names):
        items.append(service(name, [f"10.96.5.{index + 1}"], [service_port(80, name="http")]))
        items.append(endpoint_slice(name, [endpoint(f"10.244.5.{index + 1}")]))
    path.write_text(json.dumps(cluster_list(items)))


def dig(ns, port, name):
    """(status, [A addresses]) of one UDP query, one try of one second."""
    out = run_in(ns, "dig", "+tries=1", "+time=1", "-p", port, "@127.0.0.1", name, "A",
                 check=False).stdout
    status = next((line.split("status: ")[1].split(",")[0] for line in out.splitlines()
                   if "status: " in line), "no answer")
    addresses = [line.split()[-1] for line in out.splitlines()
                 if line and not line.startswith(";") and "\tA\t" in line.replace(" ", "\t")]
    return status, addresses


def name_of(service_name):
    return f"{service_name}.default.svc.cluster.local"


def state_files(state_dir):
    return sorted(pathlib.Path(state_dir).glob("netns-*/dns-zone.state"))


def served_then_stopped(daemon_factory, netns, tmp_path, state_dir, dns_port, *names):
    """A daemon on a file source of `names` that answers them, then SIGTERM: it leaves
    its warm state behind."""
    source = tmp_path / "first.json"
    write_cluster(source, *names)
    first = daemon_factory(source, f"--dns-listen=127.0.0.1:{dns_port}",
                           f"--state-dir={state_dir}", "--dns-upstream=127.0.0.1:9")
    for name in names:
        wait_for(lambda: dig(netns, dns_port, name_of(name))[0] == "NOERROR",
                 f"{name} answered by the first daemon")
    assert first.stop() == 0, first.stderr()
    assert len(state_files(state_dir)) == 1, first.stderr()
    return first


def test_a_new_daemon_answers_from_the_warm_state_before_its_source_has_a_state(
        daemon_factory, netns, tmp_path):
    state_dir, dns_port = tmp_path / "state", free_port(socket.SOCK_DGRAM)
    served_then_stopped(daemon_factory, netns, tmp_path, state_dir, dns_port, "web", "shop")
    second = daemon_factory(tmp_path / "unused.json", f"--dns-listen=127.0.0.1:{dns_port}",
                            f"--state-dir={state_dir}", "--dns-upstream=127.0.0.1:9",
                            *NO_API_SERVER)
    wait_for(lambda: dig(netns, dns_port, name_of("web"))[0] != "no answer",
             "the second daemon answering")
    assert dig(netns, dns_port, name_of("web")) == ("NOERROR", ["10.96.5.1"]), second.stderr()
    assert dig(netns, dns_port, name_of("shop")) == ("NOERROR", ["10.96.5.2"])
    # A name the zone never had is an authoritative no, not a hold-back.
    assert dig(netns, dns_port, name_of("nothere"))[0] == "NXDOMAIN"
    status, _, body = second.get("/metrics")
    assert status == 200
    assert metric(body, "switchboard_dns_warm_state_answering") == 1
    assert "dns: answering from the warm state" in second.stderr()


def test_the_first_synced_zone_replaces_the_warm_state(daemon_factory, netns, tmp_path):
    state_dir, dns_port = tmp_path / "state", free_port(socket.SOCK_DGRAM)
    served_then_stopped(daemon_factory, netns, tmp_path, state_dir, dns_port, "web")
    # While it was down, web was deleted and cart created.
    source = tmp_path / "second.json"
    write_cluster(source, "cart")
    second = daemon_factory(source, f"--dns-listen=127.0.0.1:{dns_port}",
                            f"--state-dir={state_dir}", "--dns-upstream=127.0.0.1:9")
    wait_for(lambda: dig(netns, dns_port, name_of("cart")) == ("NOERROR", ["10.96.5.1"]),
             "cart answered after the first sync")
    assert dig(netns, dns_port, name_of("web"))[0] == "NXDOMAIN", second.stderr()
    _, _, body = second.get("/metrics")
    assert metric(body, "switchboard_dns_warm_state_answering") == 0
    # The new zone is written back in its turn.
    wait_for(lambda: metric(second.get("/metrics")[2],
                            "switchboard_dns_warm_state_writes_total") >= 1,
             "the synced zone written to the warm state")


def test_a_corrupt_state_is_ignored_with_one_line_and_the_zone_is_held_back(
        daemon_factory, netns, tmp_path):
    state_dir, dns_port = tmp_path / "state", free_port(socket.SOCK_DGRAM)
    served_then_stopped(daemon_factory, netns, tmp_path, state_dir, dns_port, "web")
    (state,) = state_files(state_dir)
    damaged = bytearray(state.read_bytes())
    damaged[len(damaged) // 2] ^= 0x40
    state.write_bytes(bytes(damaged))
    second = daemon_factory(tmp_path / "unused.json", f"--dns-listen=127.0.0.1:{dns_port}",
                            f"--state-dir={state_dir}", "--dns-upstream=127.0.0.1:9",
                            *NO_API_SERVER)
    wait_for(lambda: dig(netns, dns_port, name_of("web"))[0] != "no answer",
             "the second daemon answering")
    assert dig(netns, dns_port, name_of("web"))[0] == "SERVFAIL"
    lines = [line for line in second.stderr().splitlines() if "warm state ignored" in line]
    assert len(lines) == 1 and "checksum mismatch" in lines[0], second.stderr()


def test_a_state_of_another_network_namespace_is_not_read(daemon_factory, switchboard_bin, netns,
                                                          tmp_path):
    state_dir, dns_port = tmp_path / "state", free_port(socket.SOCK_DGRAM)
    served_then_stopped(daemon_factory, netns, tmp_path, state_dir, dns_port, "web")
    (state,) = state_files(state_dir)
    with network_namespace.namespace() as other:
        # The other namespace's own folder, holding this namespace's file.
        folder = network_namespace.state_folder(other, state_dir)
        folder.mkdir(mode=0o700)
        (folder / "dns-zone.state").write_bytes(state.read_bytes())
        log_path = tmp_path / "other.log"
        with open(log_path, "w") as log:
            daemon = subprocess.Popen(network_namespace.in_ns(other, [
                switchboard_bin, *NO_API_SERVER, "--hostname-override=node-a",
                f"--dns-listen=127.0.0.1:{dns_port}", f"--state-dir={state_dir}",
                "--dns-upstream=127.0.0.1:9", "--metrics-bind-address=",
                "--healthz-bind-address="]), stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_for(lambda: dig(other, dns_port, name_of("web"))[0] != "no answer",
                     "the daemon of the other namespace answering")
            assert dig(other, dns_port, name_of("web"))[0] == "SERVFAIL"
            assert "another boot or network namespace" in log_path.read_text()
        finally:
            terminate(daemon)
