"""A kubeadm node in miniature: switchboard started exactly as kubeadm starts kube-proxy.

The node is a netbed namespace with a Pod behind a ClusterIP Service; the
API server is the fake one (tests/fake_apiserver), listening inside the
node's namespace. The daemon sees the files a kube-proxy Pod sees: kubeadm's
`kube-proxy` ConfigMap (tests/data/kubeadm/config.conf and kubeconfig.conf,
as kubeadm writes them) at /var/lib/kube-proxy, and the service account's
token and ca.crt at /var/run/secrets/kubernetes.io/serviceaccount. Those
paths are bind mounts in a private mount namespace of the daemon's own, so
the host's /var/lib and /run are never touched. KUBERNETES_SERVICE_HOST names
the `kubernetes` Service's ClusterIP, which nothing answers before a proxy
programs it: the daemon must reach the API server through the kubeconfig.

Also here: a healthz port that is taken does not stop the proxy (kube-proxy's
behaviour without --bind-address-hard-fail), and with the flag it does.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

import netbed
import network_namespace
from kube_objects import endpoint_slice, service, service_port
from netbed import Bed, Switchboard, node_object, pod_endpoint
from network_namespace import in_ns

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fake_apiserver"))
import fake_apiserver as fake  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
KUBEADM = HERE.parent / "data" / "kubeadm"
# The command line kubeadm gives kube-proxy (cmd/kubeadm/app/phases/addons/proxy).
KUBEADM_ARGS = ["--config=/var/lib/kube-proxy/config.conf", "--hostname-override=node-a"]
SERVICE_IP = "10.96.0.50"
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service: unreachable until proxied
TOKEN = "kubeadm-node-token"

# Mounts the Pod's view of the two kube-proxy folders, then runs the daemon
# ($2) with the rest of the arguments. Fixed text: no value is spliced in.
POD_MOUNTS = r"""
set -eu
root=$1; shift
mount -t tmpfs -o size=1m,mode=755 sb-kubeadm /var/lib
mkdir -p /var/lib/kube-proxy
mount --bind "$root/kube-proxy" /var/lib/kube-proxy
mount -t tmpfs -o size=1m,mode=755 sb-kubeadm /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount
mount --bind "$root/serviceaccount" /run/secrets/kubernetes.io/serviceaccount
exec "$@"
"""


@pytest.fixture
def bed(root):
    bed = Bed({"node-a": ["web", "client"]})
    bed.up()
    bed.start_servers(pods=["web"])
    yield bed
    bed.down()


def cluster_objects(bed):
    web = bed.pods["web"]
    return [
        node_object(bed.nodes["node-a"]),
        service("web", [SERVICE_IP], [service_port(80, name="http", target=8080)]),
        endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")]),
        # The API server's own Service, with an endpoint nobody answers on:
        # the daemon must never need it to bootstrap.
        service("kubernetes", [KUBERNETES_SERVICE_IP], [service_port(443, name="https", target=6443)]),
    ]


def pod_files(tmp_path, pki, api):
    """The kube-proxy ConfigMap and service account folders of a kube-proxy Pod."""
    root = tmp_path / "pod"
    (root / "kube-proxy").mkdir(parents=True)
    (root / "serviceaccount").mkdir(parents=True)
    shutil.copy(KUBEADM / "config.conf", root / "kube-proxy" / "config.conf")
    kubeconfig = (KUBEADM / "kubeconfig.conf").read_text()
    assert "https://control-plane.example:6443" in kubeconfig
    (root / "kube-proxy" / "kubeconfig.conf").write_text(
        kubeconfig.replace("https://control-plane.example:6443", api.url))
    shutil.copy(os.path.join(pki, "ca.crt"), root / "serviceaccount" / "ca.crt")
    (root / "serviceaccount" / "token").write_text(TOKEN)
    (root / "serviceaccount" / "namespace").write_text("kube-system")
    return root


def node_get(bed, address, path):
    """GET from inside node-a's namespace: (status, body); status None when refused."""
    proc = network_namespace.run(in_ns(bed.nodes["node-a"].ns, [netbed.PYTHON, HERE / "netbed.py", "http-get",
                                                      f"http://{address}{path}", "--timeout", "1"]),
                      check=False, timeout=15)
    if proc.returncode != 0:
        return None, proc.stderr
    status, _, body = proc.stdout.partition("\n")
    return int(status), body


def wait_for(predicate, what, timeout, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise AssertionError(f"{what} not within {timeout} s\n{tail}")


def sysctl_value(bed, name):
    path = f"/proc/sys/net/netfilter/{name}"
    return network_namespace.run(in_ns(bed.nodes["node-a"].ns, ["cat", path])).stdout.strip()


def test_kubeadm_command_line_programs_the_node_without_a_service_address(
        bed, switchboard_bin, tmp_path):
    pki = fake.make_pki(str(tmp_path / "pki"))
    api = fake.FakeApiServer(pki, tokens=(TOKEN,), seed=3)
    for item in cluster_objects(bed):
        api.apply(item)
    api.start(netns=bed.nodes["node-a"].ns)
    root = pod_files(tmp_path, pki, api)
    log_path = tmp_path / "switchboard.log"
    env = dict(os.environ, NODE_NAME="node-a", KUBERNETES_SERVICE_HOST=KUBERNETES_SERVICE_IP,
               KUBERNETES_SERVICE_PORT="443")
    argv = in_ns(bed.nodes["node-a"].ns,
                 ["unshare", "--mount", "--propagation", "private", "sh", "-c", POD_MOUNTS, "sh",
                  str(root), str(switchboard_bin), *KUBEADM_ARGS])
    started = time.monotonic()
    with open(log_path, "w") as log:
        daemon = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        # Before any rule exists nothing answers the kubernetes ClusterIP.
        wait_for(lambda: node_get(bed, "127.0.0.1:10249", "/readyz")[0] == 200,
                 "/readyz 200 (kubeadm's default metricsBindAddress)", 30, log_path)
        print(f"kubeadm node programmed {time.monotonic() - started:.2f} s after start")
        assert daemon.poll() is None
        answers = bed.probe("client", SERVICE_IP, 80, count=3)
        assert [a.pod for a in answers] == ["web"] * 3, answers
        status, body = node_get(bed, "127.0.0.1:10256", "/healthz")  # kubeadm's default healthz
        assert status == 200, body
        assert json.loads(body)["nodeEligible"] is True
        # conntrack: kubeadm writes null timeouts, which kube-proxy defaults to
        # 24h established and 1h close-wait, and sets at start.
        assert sysctl_value(bed, "nf_conntrack_tcp_timeout_established") == "86400"
        assert sysctl_value(bed, "nf_conntrack_tcp_timeout_close_wait") == "3600"
        status, mode = node_get(bed, "127.0.0.1:10249", "/proxyMode")
        assert (status, mode) == (200, "nftables")  # mode: "" is switchboard's default
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(10)
        api.stop()
        network_namespace.run(in_ns(bed.nodes["node-a"].ns, [switchboard_bin, "--cleanup"]), check=False)


def hold_port(bed, port):
    """A listener on 127.0.0.1:port in node-a's namespace, as another program would hold it."""
    code = ("import socket,sys,time\n"
            "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            f"s.bind(('127.0.0.1',{int(port)})); s.listen(1); print('held', flush=True)\n"
            "time.sleep(120)\n")
    proc = subprocess.Popen(in_ns(bed.nodes["node-a"].ns, [netbed.PYTHON, "-c", code]),
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_taken_healthz_port_does_not_stop_the_proxy(bed, switchboard_bin):
    holder = hold_port(bed, 10256)
    daemon = Switchboard(bed, switchboard_bin, "nftables")
    try:
        web = bed.pods["web"]
        daemon.set_cluster([
            service("web", [SERVICE_IP], [service_port(80, name="http", target=8080)]),
            endpoint_slice("web", [pod_endpoint(web)], [("http", 8080, "TCP")]),
        ])
        daemon.start()  # waits for /readyz on the metrics address: the proxy synced
        answers = bed.probe("client", SERVICE_IP, 80, count=2)
        assert [a.pod for a in answers] == ["web"] * 2, answers
        assert daemon.http_get(Switchboard.HEALTHZ, "/healthz")[0] is None  # the holder has it
        status, metrics = daemon.http_get(Switchboard.METRICS, "/metrics")
        assert status == 200
        failures = [line for line in metrics.splitlines()
                    if line.startswith("switchboard_http_bind_failures_total ")]
        assert failures and int(failures[0].split()[1]) >= 1, failures
        holder.terminate()
        holder.wait(10)
        # The retry runs every 5 s; the bound covers two periods.
        wait_for(lambda: daemon.http_get(Switchboard.HEALTHZ, "/healthz")[0] == 200,
                 "/healthz served once the port is free", 15, daemon.log_path)
        assert daemon.running()
    finally:
        if holder.poll() is None:
            holder.kill()
        daemon.close()


def test_bind_address_hard_fail_exits_on_a_taken_port(bed, switchboard_bin):
    holder = hold_port(bed, 10256)
    daemon = Switchboard(bed, switchboard_bin, "nftables", extra_args=["--bind-address-hard-fail"])
    try:
        daemon.set_cluster([])
        daemon.start(wait=False)
        code = daemon._proc.wait(15)
        assert code == 1
        log = daemon.log_path.read_text()
        assert "--healthz-bind-address" in log and "127.0.0.1:10256" in log, log
    finally:
        holder.kill()
        holder.wait(10)
        network_namespace.run(in_ns(bed.nodes["node-a"].ns, [switchboard_bin, "--cleanup"]), check=False)
