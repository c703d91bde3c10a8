"""The switchboard binary as a process: flags and exit codes, `plan`,
--dry-run, and the running daemon's HTTP endpoints, health-check node
ports, signals and --cleanup.

Tests that run the daemon itself program nftables, so they need root and
run inside a plain network namespace (conftest's `netns`; loopback only);
the rest need nothing.
"""
import json
import resource
import signal
import subprocess
import time

import pytest

import kube_objects
from clusters import HEALTH_PORT, http_service, slice_of, web_and_edge
from network_namespace import in_ns, run_in
from probes import free_port, metric, wait_for

def run(binary, *args, timeout=30):
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def one_error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("switchboard: "), lines[0]
    return lines[0]


# ---------------------------------------------------------------- no root


def test_help_prints_usage_and_exits_0(switchboard_bin):
    result = run(switchboard_bin, "--help")
    assert result.returncode == 0
    for flag in ("--proxy-mode", "--source", "--min-sync-period", "--dns-listen", "--cleanup"):
        assert flag in result.stdout


@pytest.mark.parametrize("args, flag", [
    (["--proxy-mode=foo"], "--proxy-mode"),
    (["--proxy-mode", "userspace"], "--proxy-mode"),
    (["--source=etcd"], "--source"),
    (["--min-sync-period=soon"], "--min-sync-period"),
    (["--sync-period", "10"], "--sync-period"),
    (["--metrics-bind-address=localhost:10249"], "--metrics-bind-address"),
    (["--cluster-cidr=10.0.0.0/40"], "--cluster-cidr"),
    (["--ipvs-scheduler=wrr"], "--ipvs-scheduler"),
    (["--dns-pods=maybe"], "--dns-pods"),
    (["--masquerade-bit=40"], "--masquerade-bit"),
    (["--no-such-flag"], "--no-such-flag"),
])
def test_bad_flag_exits_2_with_one_line_naming_it(switchboard_bin, args, flag):
    result = run(switchboard_bin, *args)
    assert result.returncode == 2
    assert flag in one_error_line(result)
    assert result.stdout == ""


def test_proxy_mode_error_wording(switchboard_bin):
    result = run(switchboard_bin, "--proxy-mode=foo")
    assert one_error_line(result) == \
        'switchboard: --proxy-mode: "foo" is not one of nftables, iptables, ipvs'


def test_ipvs_dry_run_prints_virtual_servers_then_helper_rules(switchboard_bin, tmp_path):
    # IPVS mode's --dry-run needs no IPVS in this kernel: it touches nothing.
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    result = run(switchboard_bin, "--proxy-mode=ipvs", f"--source=file:{source}", "--dry-run",
                 "--hostname-override=node-a", "--ipvs-scheduler=lc")
    assert result.returncode == 0, result.stderr
    servers, _, helper = result.stdout.partition("\n\n")
    lines = servers.splitlines()
    # ipvsadm -Sn's form: each virtual server, then its real servers.
    web = lines.index("-A -t 10.96.0.10:80 -s lc")
    assert lines[web + 1:web + 3] == ["-a -t 10.96.0.10:80 -r 10.244.1.10:8080 -m -w 1",
                                      "-a -t 10.96.0.10:80 -r 10.244.1.11:8080 -m -w 1"]
    assert "-A -t 10.96.0.20:443 -s lc" in lines
    assert all(line.startswith(("-A ", "-a ")) for line in lines), servers
    assert helper.startswith("table inet switchboard-ipvs {"), helper[:200]


def test_ipvs_falls_back_to_nftables_without_ip_vs(switchboard_bin, daemon_factory, tmp_path):
    # The build machines' kernel has no IPVS: the daemon says so once and runs nftables.
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    daemon = daemon_factory(source, "--proxy-mode=ipvs")
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")
    assert daemon.get("/proxyMode")[2] == "nftables"
    tables = run_in(daemon.namespace, "nft", "list", "tables").stdout
    assert "table inet switchboard\n" in tables
    assert "switchboard-ipvs" not in tables
    _, _, body = daemon.get("/metrics")
    assert 'proxy_mode="nftables"' in body
    notes = [line for line in daemon.stderr().splitlines() if "no IPVS" in line]
    assert len(notes) == 1, daemon.stderr()
    assert "running in nftables mode" in notes[0]


def test_ipvs_cleanup_removes_the_link_and_helper_table(switchboard_bin, netns):
    # What an IPVS-mode run leaves (here made by hand: this kernel has no IPVS).
    assert run_in(netns, "ip", "link", "add", "sb-ipvs0", "type", "bridge").returncode == 0
    assert run_in(netns, "ip", "addr", "add", "10.96.0.10/32", "dev", "sb-ipvs0").returncode == 0
    assert run_in(netns, "nft", "add", "table", "inet", "switchboard-ipvs").returncode == 0
    assert run_in(netns, "nft", "add", "table", "inet", "someone-else").returncode == 0

    result = run_in(netns, switchboard_bin, "--proxy-mode=ipvs", "--cleanup")

    assert result.returncode == 0, result.stderr
    assert "sb-ipvs0" not in run_in(netns, "ip", "link", "show").stdout
    tables = run_in(netns, "nft", "list", "tables").stdout
    assert "switchboard-ipvs" not in tables
    assert "someone-else" in tables
    assert run_in(netns, switchboard_bin, "--cleanup").returncode == 0, "idempotent"


def test_plan_prints_the_plan(switchboard_bin, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    result = run(switchboard_bin, "plan", "--source", f"file:{source}", "--hostname-override",
                 "Node-A")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["node"] == "node-a"
    assert [(s["service"], s["port"]) for s in plan["services"]] == [("edge", 443), ("web", 80)]
    assert len(plan["services"][1]["clusterEndpoints"]) == 2


def test_plan_of_unreadable_source_exits_2_naming_the_file(switchboard_bin, tmp_path):
    missing = tmp_path / "absent-cluster.json"
    result = run(switchboard_bin, "plan", "--source", f"file:{missing}", "--hostname-override", "n")
    assert result.returncode == 2
    assert "absent-cluster.json" in one_error_line(result)
    assert result.stdout == ""


def test_dry_run_prints_the_rules(switchboard_bin, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    result = run(switchboard_bin, "--dry-run", f"--source=file:{source}",
                 "--hostname-override=node-a", "--metrics-bind-address=",
                 "--healthz-bind-address=")
    assert result.returncode == 0, result.stderr
    assert "table inet switchboard" in result.stdout
    assert "10.96.0.10" in result.stdout
    assert "10.244.1.11" in result.stdout


# ---------------------------------------------------------- root, netns


PARTIAL_SYNCS = 'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"}'


def test_daemon_serves_its_endpoints_and_follows_changes(switchboard_bin, daemon_factory, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    daemon = daemon_factory(source)
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")

    assert daemon.get("/proxyMode")[2] == "nftables"
    assert daemon.get("/livez")[0] == 200

    # /debug/services is exactly what `switchboard plan` prints for the same input.
    status, headers, body = daemon.get("/debug/services")
    assert status == 200
    plan = run(switchboard_bin, "plan", f"--source=file:{source}", "--hostname-override=node-a")
    assert body == plan.stdout

    status, headers, body = daemon.get("/metrics")
    assert status == 200
    for name in ('kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"}',
                 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv6"}',
                 'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}',
                 "kubeproxy_sync_proxy_rules_service_changes_total",
                 "kubeproxy_sync_proxy_rules_endpoint_changes_total",
                 "switchboard_sync_errors_total"):
        assert metric(body, name) is not None, name
    assert metric(body, 'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"}') >= 1
    assert metric(body, "switchboard_sync_errors_total") == 0
    assert 'switchboard_build_info{' in body

    status, headers, body = daemon.get("/healthz", daemon.healthz_port)
    assert status == 200
    health = json.loads(body)
    assert list(health) == ["lastUpdated", "currentTime", "nodeEligible", "healthy", "status"]
    assert health["nodeEligible"] is True and health["healthy"] is True
    assert daemon.get("/livez", daemon.healthz_port)[0] == 200

    # The health-check node port of the Local Service, with its one local endpoint.
    status, headers, body = daemon.get("/", HEALTH_PORT)
    assert status == 200
    assert json.loads(body) == {"service": {"namespace": "default", "name": "edge"},
                                "localEndpoints": 1, "serviceProxyHealthy": True}

    # The kernel has the backend's table ("list chains": the table's chains
    # without its set elements, which are the nftables backend's business).
    assert "table inet switchboard" in run_in(daemon.namespace, "nft", "list", "chains").stdout
    partial_syncs = metric(daemon.get("/metrics")[2],
                           PARTIAL_SYNCS)

    # A change in the source reaches the plan, the rules and the health check.
    extra = http_service("late", "10.96.0.30", 8000)
    document = web_and_edge([extra])
    document["items"][3] = slice_of("edge", [])  # edge loses its local endpoint
    kube_objects.write_atomically(source, document)

    def late_in_plan():
        plan = json.loads(daemon.get("/debug/services")[2] or "{}")
        return any(s["service"] == "late" for s in plan.get("services", []))
    wait_for(late_in_plan, "the new Service in /debug/services")
    wait_for(lambda: daemon.get("/", HEALTH_PORT)[0] == 503, "the health check to turn 503")
    # ...through partial syncs that the backend accepted.
    body = daemon.get("/metrics")[2]
    assert metric(body, PARTIAL_SYNCS) > partial_syncs
    assert metric(body, "switchboard_sync_errors_total") == 0
    assert metric(body, "kubeproxy_sync_proxy_rules_service_changes_total") >= 3

    # SIGTERM: exit 0 and the rules stay (kube-proxy does not flush on exit).
    assert daemon.stop() == 0
    assert "table inet switchboard" in run_in(daemon.namespace, "nft", "list", "chains").stdout

    # --cleanup removes them.
    cleanup = run_in(daemon.namespace, switchboard_bin, "--cleanup")
    assert cleanup.returncode == 0, cleanup.stderr
    chains = run_in(daemon.namespace, "nft", "list", "chains")
    assert chains.returncode == 0, chains.stderr
    assert "table inet switchboard" not in chains.stdout


def test_health_check_port_closes_when_service_goes(daemon_factory, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    daemon = daemon_factory(source)
    wait_for(lambda: daemon.get("/", HEALTH_PORT)[0] == 200, "the health-check node port")
    document = web_and_edge()
    document["items"] = document["items"][:2]  # edge and its slice removed
    kube_objects.write_atomically(source, document)
    wait_for(lambda: daemon.get("/", HEALTH_PORT)[0] == 0, "the health-check port to close")


def test_metrics_port_in_use_exits_1_with_hard_fail(switchboard_bin, daemon_factory, netns,
                                                    tmp_path):
    """Without --bind-address-hard-fail a taken port is retried (test_kubeadm_node.py).
    The second daemon has no node state: with the first's, it would take the first's
    sockets over (test_restarts.py)."""
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    first = daemon_factory(source)
    wait_for(lambda: first.get("/readyz")[0] == 200, "the first daemon")
    second = subprocess.run(
        in_ns(netns, [switchboard_bin, f"--source=file:{source}",
         "--hostname-override=node-a", f"--metrics-bind-address=127.0.0.1:{first.metrics_port}",
         f"--healthz-bind-address=127.0.0.1:{free_port()}", "--bind-address-hard-fail",
         "--state-dir="]),
        capture_output=True, text=True, timeout=30, check=False)
    assert second.returncode == 1
    line = one_error_line(second)
    assert "--metrics-bind-address" in line and str(first.metrics_port) in line


def test_bad_source_file_exits_2_before_serving(daemon_factory, tmp_path):
    daemon = daemon_factory(tmp_path / "missing.json")
    assert daemon.process.wait(timeout=20) == 2
    assert "missing.json" in one_error_line(subprocess.CompletedProcess([], 2, "", daemon.stderr()))


def test_sigint_stops_cleanly(daemon_factory, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    daemon = daemon_factory(source)
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")
    daemon.process.send_signal(signal.SIGINT)
    assert daemon.process.wait(timeout=20) == 0


def open_files_limit(pid):
    """(soft, hard) "Max open files" of a process, from /proc/PID/limits."""
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError(f"no open files limit for {pid}")


def test_soft_open_file_limit_is_raised_to_the_hard_one(daemon_factory, tmp_path):
    # The DNS server, forwarder and HTTP listeners hold a descriptor per
    # connection and per upstream query; a soft limit of 1024 (systemd's
    # default for services) would run out first. The daemon inherits a low
    # soft limit from here and raises it at start (Go's runtime does the same
    # for kube-proxy and CoreDNS).
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    if saved[1] != resource.RLIM_INFINITY and saved[1] <= 256:
        pytest.fail(f"the hard open file limit here is {saved[1]}: nothing to raise to")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, saved[1]))
    try:
        daemon = daemon_factory(source)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")
    soft, hard = open_files_limit(daemon.process.pid)
    assert (soft, hard) == (saved[1], saved[1]), daemon.stderr()


def test_dns_answers_when_dns_listen_is_set(daemon_factory, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    dns_port = free_port()
    # The upstream is a closed loopback port: only cluster names are asked.
    daemon = daemon_factory(source, f"--dns-listen=127.0.0.1:{dns_port}",
                            "--dns-upstream=127.0.0.1:9")
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")

    def answer():
        result = run_in(daemon.namespace, "dig", "+short", "+time=2", "+tries=1", "-p",
                        dns_port, "@127.0.0.1", "web.default.svc.cluster.local")
        return result.stdout.strip()
    assert wait_for(answer, "a DNS answer") == "10.96.0.10"


def test_dry_run_touches_no_kernel_state(switchboard_bin, netns, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    result = run_in(netns, switchboard_bin, "--dry-run", f"--source=file:{source}",
                    "--hostname-override=node-a")
    assert result.returncode == 0, result.stderr
    assert "table inet switchboard" in result.stdout
    chains = run_in(netns, "nft", "list", "chains")
    assert chains.returncode == 0, chains.stderr
    assert "switchboard" not in chains.stdout


def node(**spec):
    return kube_objects.node("node-a", ["192.168.1.5"], hostname=False, **spec)


def test_node_tainted_for_deletion_fails_healthz_not_livez(daemon_factory, tmp_path):
    source = tmp_path / "cluster.json"
    document = web_and_edge()
    document["items"].append(node())
    kube_objects.write_atomically(source, document)
    daemon = daemon_factory(source)
    wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")
    status, headers, body = daemon.get("/healthz", daemon.healthz_port)
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    health = json.loads(body)
    assert health["nodeEligible"] is True
    assert set(health["status"]) == {"IPv4", "IPv6"}

    # The cluster autoscaler marks the node for deletion.
    document["items"][-1] = node(taints=[{"key": "ToBeDeletedByClusterAutoscaler",
                                          "value": "1714564800", "effect": "NoSchedule"}])
    kube_objects.write_atomically(source, document)
    wait_for(lambda: daemon.get("/healthz", daemon.healthz_port)[0] == 503, "/healthz 503")
    status, headers, body = daemon.get("/healthz", daemon.healthz_port)
    health = json.loads(body)
    assert health["nodeEligible"] is False and health["healthy"] is True
    assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = daemon.get("/livez", daemon.healthz_port)
    assert status == 200, body
    assert "nodeEligible" not in json.loads(body)

    body = daemon.get("/metrics")[2]
    assert metric(body, 'kubeproxy_proxy_healthz_total{code="503"}') >= 2
    assert metric(body, 'kubeproxy_proxy_healthz_total{code="200"}') >= 1
    assert metric(body, 'kubeproxy_proxy_livez_total{code="200"}') >= 1
    families = {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE ")}
    for family in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                   "process_virtual_memory_bytes", "process_virtual_memory_max_bytes",
                   "process_open_fds", "process_max_fds", "process_start_time_seconds",
                   "kubernetes_build_info",
                   "kubeproxy_network_programming_duration_seconds",
                   "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
                   "kubeproxy_sync_proxy_rules_service_changes_pending",
                   "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
                   "kubeproxy_sync_proxy_rules_no_local_endpoints_total"):
        assert family in families, family
    assert metric(body, "process_open_fds") > 0
    assert metric(body, "process_start_time_seconds") > time.time() - 3600
    # Every family is announced once.
    helps = [line.split()[2] for line in body.splitlines() if line.startswith("# HELP ")]
    assert len(helps) == len(set(helps))

    # The taint goes: eligible again.
    document["items"][-1] = node()
    kube_objects.write_atomically(source, document)
    wait_for(lambda: daemon.get("/healthz", daemon.healthz_port)[0] == 200, "/healthz 200 again")


def test_health_check_port_answers_on_ipv4_and_ipv6(daemon_factory, netns, tmp_path):
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())
    daemon = daemon_factory(source)
    wait_for(lambda: daemon.get("/", HEALTH_PORT)[0] == 200, "the health-check node port")
    # No --nodeport-addresses: 0.0.0.0 and [::] both, so ::1 answers too.
    script = ("import urllib.request\n"
              f"r = urllib.request.urlopen('http://[::1]:{HEALTH_PORT}/', timeout=10)\n"
              "print(r.status)\n")
    result = run_in(netns, "/usr/bin/python3", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "200"
