"""`switchboard pod-dns --node-resolv-conf=` (issue 27): an empty value is
kubelet's `resolvConf: ""` (`--resolv-conf=""`), no node resolv.conf. As
kubelet's GetPodDNS does then (pkg/kubelet/network/dns/dns.go and the
resolvConf "" cases of its dns_test.go): a Default Pod gets "the nameserver
on the local machine" (127.0.0.1, search "."), a ClusterFirst Pod the
cluster's server and search list with nothing of the node's, and no file is
read. No privileges needed."""
import subprocess

import pytest
from kube_objects import pod, write_atomically

NODE_RESOLV_CONF = "nameserver 192.0.2.53\nsearch corp.example\noptions timeout:2\n"


def pod_dns(switchboard_bin, tmp_path, dns_policy, *flags):
    path = tmp_path / f"{dns_policy}.json"
    write_atomically(path, pod("p", "shop", ["10.244.0.9"], dns_policy=dns_policy))
    # No KubeletConfiguration: the flags and kubelet's defaults only.
    config = tmp_path / "kubelet-config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    out = subprocess.run([str(switchboard_bin), "pod-dns", str(path), "--cluster-dns=10.96.0.10",
                          f"--kubelet-config={config}", *flags],
                         capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr
    # The resolv.conf as switchboard prints it: search, nameserver, options.
    return out.stdout.splitlines()


EMPTY_SPELLINGS = [("--node-resolv-conf=",), ("--node-resolv-conf", ""), ("--resolv-conf=",)]


@pytest.mark.parametrize("flags", EMPTY_SPELLINGS)
def test_default_pod_gets_the_local_machine_resolver(switchboard_bin, tmp_path, flags):
    assert pod_dns(switchboard_bin, tmp_path, "Default", *flags) == [
        "search .",
        "nameserver 127.0.0.1",
    ]


@pytest.mark.parametrize("flags", EMPTY_SPELLINGS)
def test_cluster_first_pod_gets_no_node_search_domain(switchboard_bin, tmp_path, flags):
    assert pod_dns(switchboard_bin, tmp_path, "ClusterFirst", *flags) == [
        "search shop.svc.cluster.local svc.cluster.local cluster.local",
        "nameserver 10.96.0.10",
        "options ndots:5",
    ]


def test_a_node_resolv_conf_is_read_when_named(switchboard_bin, tmp_path):
    # The contrast that makes the cases above mean something: the same Pods
    # with a node file take its nameserver, search domain and options.
    node = tmp_path / "resolv.conf"
    node.write_text(NODE_RESOLV_CONF)
    flag = f"--node-resolv-conf={node}"
    assert pod_dns(switchboard_bin, tmp_path, "Default", flag) == [
        "search corp.example",
        "nameserver 192.0.2.53",
        "options timeout:2",
    ]
    assert pod_dns(switchboard_bin, tmp_path, "ClusterFirst", flag) == [
        "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example",
        "nameserver 10.96.0.10",
        "options ndots:5",
    ]
