"""`switchboard pod-env` (issue 14) from a file source: the variables kubelet
gives a Pod started in a namespace, as the Kubernetes Service page names
them, and bad input as one line on stderr with exit 2. No privileges needed;
test_kube_source.py checks the same from the API server."""
import subprocess

import pytest
from kube_objects import cluster_list, service, service_port, write_atomically


def cluster():
    return cluster_list([
        service("kubernetes", ["10.96.0.1"], [service_port(443, name="https", target=6443)]),
        service("redis-primary", ["10.0.0.11"], [service_port(6379)], namespace="shop"),
        service("web", ["10.96.5.5", "fd00::5"],
                [service_port(80, name="http", target=8080),
                 service_port(53, name="dns-udp", protocol="UDP")], namespace="shop"),
        service("db", [], [service_port(5432)], namespace="shop"),  # headless
        service("ext", [], [], namespace="shop", external_name="db.example.com"),
        service("cart", ["10.96.6.6"], [service_port(80)], namespace="other"),
    ])


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "cluster.json"
    write_atomically(path, cluster())
    return f"file:{path}"


def pod_env(switchboard_bin, *args):
    return subprocess.run([str(switchboard_bin), "pod-env", *args], capture_output=True,
                          text=True, timeout=30, check=False)


def variables(out):
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines == sorted(lines)
    return dict(line.split("=", 1) for line in lines)


MASTER = {
    "KUBERNETES_SERVICE_HOST": "10.96.0.1",
    "KUBERNETES_SERVICE_PORT": "443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "443",
    "KUBERNETES_PORT": "tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_443_TCP_PORT": "443",
    "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
}


def test_a_namespace_gets_its_services_and_the_masters(switchboard_bin, source):
    got = variables(pod_env(switchboard_bin, "--namespace", "shop", "--source", source))
    redis = {
        "REDIS_PRIMARY_SERVICE_HOST": "10.0.0.11",
        "REDIS_PRIMARY_SERVICE_PORT": "6379",
        "REDIS_PRIMARY_PORT": "tcp://10.0.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.0.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
        "REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379",
        "REDIS_PRIMARY_PORT_6379_TCP_ADDR": "10.0.0.11",
    }
    web = {
        "WEB_SERVICE_HOST": "10.96.5.5",  # spec.clusterIP, the first of clusterIPs
        "WEB_SERVICE_PORT": "80",
        "WEB_SERVICE_PORT_HTTP": "80",
        "WEB_SERVICE_PORT_DNS_UDP": "53",
        "WEB_PORT": "tcp://10.96.5.5:80",
        "WEB_PORT_80_TCP": "tcp://10.96.5.5:80",
        "WEB_PORT_80_TCP_PROTO": "tcp",
        "WEB_PORT_80_TCP_PORT": "80",
        "WEB_PORT_80_TCP_ADDR": "10.96.5.5",
        "WEB_PORT_53_UDP": "udp://10.96.5.5:53",
        "WEB_PORT_53_UDP_PROTO": "udp",
        "WEB_PORT_53_UDP_PORT": "53",
        "WEB_PORT_53_UDP_ADDR": "10.96.5.5",
    }
    # Headless (db) and ExternalName (ext) Services get none; other's cart neither.
    assert got == {**MASTER, **redis, **web}


@pytest.mark.parametrize("flag", [["--enable-service-links=false"], ["--enable-service-links=0"],
                                  ["--enable-service-links", "false"]])
def test_without_service_links_only_the_masters(switchboard_bin, source, flag):
    assert variables(pod_env(switchboard_bin, "-n", "shop", *flag, "--source", source)) == MASTER


@pytest.mark.parametrize("flag", [["--enable-service-links"], ["--enable-service-links", "true"]])
def test_service_links_on_spelled_out(switchboard_bin, source, flag):
    got = variables(pod_env(switchboard_bin, "-n", "shop", *flag, "--source", source))
    assert got == variables(pod_env(switchboard_bin, "-n", "shop", "--source", source))
    assert "REDIS_PRIMARY_SERVICE_HOST" in got


def test_the_default_namespace(switchboard_bin, source):
    assert variables(pod_env(switchboard_bin, "--namespace=default", "--source", source)) == MASTER


@pytest.mark.parametrize("args,message", [
    (["--namespace", "nowhere"], '"nowhere" is unknown'),
    ([], "--namespace is required"),
    (["--namespace", "shop", "--bogus"], "--bogus"),
    (["--namespace", "shop", "--enable-service-links=maybe"], "maybe"),
])
def test_bad_input_is_one_line_and_exit_2(switchboard_bin, source, args, message):
    out = pod_env(switchboard_bin, *args, "--source", source)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and message in out.stderr, out.stderr


def test_a_malformed_source_file_is_one_line_and_exit_2(switchboard_bin, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List", "items": [')
    out = pod_env(switchboard_bin, "--namespace", "shop", "--source", f"file:{broken}")
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and str(broken) in out.stderr, out.stderr


def test_help_has_an_example(switchboard_bin):
    for command in ("pod-env", "pod-dns", "lookup"):
        out = subprocess.run([str(switchboard_bin), command, "--help"], capture_output=True,
                             text=True, timeout=30, check=False)
        assert out.returncode == 0 and f"switchboard {command}" in out.stdout
        assert "Example:" in out.stdout
