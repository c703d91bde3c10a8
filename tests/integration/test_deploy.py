"""The manifests in deploy/: they parse, carry what a kube-proxy replacement needs, and
every command line they give is one the binary accepts.

Each container's command runs for real, in a network namespace of its own
(so --init-only's sysctls and --cleanup-kube-proxy touch only that
namespace): the daemon's with --dry-run on a file source, and once for
real there to see its DNS answer on the node-local addresses; the init
containers as they are. Paths the manifests mount (the kube-proxy ConfigMap
at /var/lib/kube-proxy, the coredns ConfigMap at /etc/coredns,
/etc/switchboard) are mapped onto copies of the manifest's own files or of
kubeadm's (tests/data/kubeadm); $(VAR) references get the values kubelet
would give them.
"""
import pathlib
import subprocess
import time

import pytest
import yaml

import network_namespace

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEPLOY = ROOT / "deploy"
KUBEADM_DATA = ROOT / "tests" / "data" / "kubeadm"
MANIFESTS = {
    "kubeadm": DEPLOY / "kubeadm" / "switchboard.yaml",
    "standalone": DEPLOY / "switchboard.yaml",
}
# NET_BIND_SERVICE: DNS on port 53 of the node-local addresses.
CAPABILITIES = {"NET_ADMIN", "NET_RAW", "SYS_RESOURCE", "NET_BIND_SERVICE"}
# What the daemon answers DNS on, besides the kube-dns ClusterIP: NodeLocal
# DNSCache's address.
NODE_LOCAL_DNS = "169.254.20.10"
# The kube-dns ClusterIP on a default kubeadm cluster, as in
# deploy/examples/clusterip.json (the file source of the dry runs).
KUBE_DNS_IP = "10.96.0.10"


def documents(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def daemonset(path):
    sets = [doc for doc in documents(path) if doc["kind"] == "DaemonSet"]
    assert len(sets) == 1, path
    return sets[0]


def containers(ds):
    spec = ds["spec"]["template"]["spec"]
    return spec.get("initContainers", []), spec["containers"]


def volume_of(ds, mount_path, container):
    """The pod volume mounted at mount_path in container."""
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    assert mount_path in mounts, (container["name"], mount_path)
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    return volumes[mounts[mount_path]]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_daemonset_is_a_kube_proxy_replacement(name):
    ds = daemonset(MANIFESTS[name])
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["priorityClassName"] == "system-node-critical"
    assert {"operator": "Exists"} in pod["tolerations"]
    init, (main,) = containers(ds)
    # The supervisor first: it keeps the listening sockets across a crash.
    binary = "/usr/local/bin/switchboard"
    assert main["command"][:4] == [binary, "supervise", "--", binary]
    # A rollout starts the new Pod beside the old, which hands its sockets
    # over; declared ports would be host ports and keep the new Pod off the node.
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    assert "ports" not in main
    assert volume_of(ds, "/run/switchboard", main)["hostPath"] == {
        "path": "/run/switchboard", "type": "DirectoryOrCreate"}
    # kube-proxy's command line shape: a config file and the node name.
    assert "--hostname-override=$(NODE_NAME)" in main["command"]
    assert any(arg.startswith("--config=") for arg in main["command"])
    env = {e["name"]: e for e in main["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # Capabilities, not privileged, for the long-running container.
    security = main["securityContext"]
    assert not security.get("privileged", False)
    assert set(security["capabilities"]["add"]) == CAPABILITIES
    # The xtables lock is the host's (shared with kubelet and iptables users).
    lock = volume_of(ds, "/run/xtables.lock", main)
    assert lock["hostPath"] == {"path": "/run/xtables.lock", "type": "FileOrCreate"}
    assert volume_of(ds, "/lib/modules", main)["hostPath"]["path"] == "/lib/modules"
    # Probes on kube-proxy's healthz port.
    assert main["livenessProbe"]["httpGet"] == {"path": "/livez", "port": 10256}
    assert main["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 10256}
    # Init containers: kube-proxy's leftovers go first; --init-only does the
    # privileged part (sysctls) so the main container needs no privilege.
    commands = {c["name"]: c["command"] for c in init}
    assert commands["cleanup-kube-proxy"] == ["/usr/local/bin/switchboard", "--cleanup-kube-proxy"]
    assert "--init-only" in commands["init"]


def test_kubeadm_manifest_reuses_kubeadms_configmaps_and_service_account():
    ds = daemonset(MANIFESTS["kubeadm"])
    pod = ds["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kube-proxy"
    _, (main,) = containers(ds)
    # kube-proxy's command line as kubeadm writes it, then DNS: CoreDNS's
    # Corefile and the kube-dns ClusterIP from the kube-dns Service's
    # environment variable, which kubelet sets only with service links.
    assert main["command"] == ["/usr/local/bin/switchboard", "supervise", "--",
                               "/usr/local/bin/switchboard",
                               "--config=/var/lib/kube-proxy/config.conf",
                               "--hostname-override=$(NODE_NAME)",
                               "--dns-corefile=/etc/coredns/Corefile",
                               f"--dns-local-address=$(KUBE_DNS_SERVICE_HOST),{NODE_LOCAL_DNS}"]
    assert pod["enableServiceLinks"] is True
    # Declared env would shadow kubelet's value for the Service.
    assert "KUBE_DNS_SERVICE_HOST" not in {e["name"] for e in main["env"]}
    assert volume_of(ds, "/var/lib/kube-proxy", main)["configMap"]["name"] == "kube-proxy"
    # The coredns ConfigMap kubeadm made, mounted as CoreDNS's Pods mount it.
    assert volume_of(ds, "/etc/coredns", main)["configMap"] == {
        "name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}]}
    # Nothing but the DaemonSet, the Pod reader and the ServiceCIDR reader:
    # kubeadm already made the rest of the RBAC and the ConfigMap.
    docs = documents(MANIFESTS["kubeadm"])
    assert sorted(doc["kind"] for doc in docs) == ["ClusterRole", "ClusterRole", "ClusterRoleBinding",
                                                   "ClusterRoleBinding", "DaemonSet"]
    assert_own_roles(docs, "kube-proxy")


# The roles a manifest adds of its own, each with its one rule: list and
# watch this node's Pods (DNS search path) and the ServiceCIDRs (nftables
# mode's unallocated ClusterIPs), nothing more.
OWN_ROLES = {
    "switchboard:pod-reader": [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["list", "watch"]}],
    "switchboard:servicecidr-reader": [{"apiGroups": ["networking.k8s.io"],
                                        "resources": ["servicecidrs"],
                                        "verbs": ["list", "watch"]}],
}


def assert_own_roles(docs, service_account):
    """The manifest's roles of its own (OWN_ROLES), each bound to
    `service_account` by one ClusterRoleBinding, and no other role."""
    roles = [doc for doc in docs if doc["kind"] in ("ClusterRole", "Role")]
    assert {role["metadata"]["name"]: role["rules"] for role in roles} == OWN_ROLES
    assert all(role["kind"] == "ClusterRole" for role in roles)
    for name in OWN_ROLES:
        bindings = [doc for doc in docs if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")
                    and doc["roleRef"]["name"] == name]
        assert len(bindings) == 1
        assert bindings[0]["kind"] == "ClusterRoleBinding"
        assert bindings[0]["roleRef"]["kind"] == "ClusterRole"
        assert bindings[0]["subjects"] == [{"kind": "ServiceAccount", "name": service_account,
                                            "namespace": "kube-system"}]


def test_standalone_manifest_binds_system_node_proxier_and_its_own_readers_and_nothing_more():
    docs = documents(MANIFESTS["standalone"])
    assert_own_roles(docs, "switchboard")
    bindings = [doc for doc in docs if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")
                and doc["roleRef"]["name"] not in OWN_ROLES]
    assert len(bindings) == 1
    assert bindings[0]["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                      "name": "system:node-proxier"}
    assert bindings[0]["subjects"] == [{"kind": "ServiceAccount", "name": "switchboard",
                                        "namespace": "kube-system"}]
    ds = daemonset(MANIFESTS["standalone"])
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "switchboard"
    # The API server at a real address, never the kubernetes Service's ClusterIP.
    _, (main,) = containers(ds)
    env = {e["name"]: e for e in main["env"]}
    for name in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        assert env[name]["valueFrom"]["configMapKeyRef"]["name"] == "switchboard-apiserver"
    config = next(doc for doc in docs if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "switchboard")
    kube_proxy_config = yaml.safe_load(config["data"]["config.conf"])
    assert kube_proxy_config["kind"] == "KubeProxyConfiguration"
    assert kube_proxy_config["apiVersion"] == "kubeproxy.config.k8s.io/v1alpha1"
    # DNS: the ConfigMap's Corefile, and the ClusterIP the operator sets in
    # it, reaching the command through a declared variable.
    assert "--dns-corefile=/etc/switchboard/Corefile" in main["command"]
    assert f"--dns-local-address=$(KUBE_DNS_IP),{NODE_LOCAL_DNS}" in main["command"]
    assert env["KUBE_DNS_IP"]["valueFrom"]["configMapKeyRef"] == {"name": "switchboard",
                                                                   "key": "kube-dns-ip"}
    assert config["data"]["kube-dns-ip"] == KUBE_DNS_IP
    # Only the files are mounted; the address is no file of /etc/switchboard.
    assert volume_of(ds, "/etc/switchboard", main)["configMap"]["items"] == [
        {"key": "config.conf", "path": "config.conf"}, {"key": "Corefile", "path": "Corefile"}]


@pytest.fixture
def netns(root):
    """A fresh network namespace with `lo` down, as a manifest's commands meet a node's."""
    with network_namespace.namespace("deploy", loopback=False) as ns:
        yield ns


def config_files(name, tmp_path):
    """Manifest path -> local copy, for the config files the manifest mounts."""
    if name == "kubeadm":
        folder = tmp_path / "kube-proxy"
        folder.mkdir()
        for file in ("config.conf", "kubeconfig.conf"):
            (folder / file).write_text((KUBEADM_DATA / file).read_text())
        # kubeadm's coredns ConfigMap, whose `forward . /etc/resolv.conf`
        # (the Pod's, dnsPolicy Default) names the test's resolv.conf instead.
        coredns = tmp_path / "coredns"
        coredns.mkdir()
        (coredns / "Corefile").write_text(
            with_test_resolv_conf((KUBEADM_DATA / "Corefile").read_text(), tmp_path))
        return {"/var/lib/kube-proxy/": f"{folder}/", "/etc/coredns/": f"{coredns}/"}
    config = switchboard_configmap(name)
    folder = tmp_path / "switchboard"
    folder.mkdir()
    (volume,) = [v for v in daemonset(MANIFESTS[name])["spec"]["template"]["spec"]["volumes"]
                 if v.get("configMap", {}).get("name") == "switchboard"]
    for item in volume["configMap"]["items"]:
        text = config["data"][item["key"]]
        if item["key"] == "Corefile":
            text = with_test_resolv_conf(text, tmp_path)
        (folder / item["path"]).write_text(text)
    return {"/etc/switchboard/": f"{folder}/"}


def with_test_resolv_conf(corefile, tmp_path):
    """`corefile` with `forward . /etc/resolv.conf` naming a resolv.conf the test
    writes (a TEST-NET nameserver the namespace cannot reach): switchboard reads
    the file when it checks the Corefile and refuses a missing one or one with no
    nameserver, as CoreDNS does, and this machine's may be either."""
    resolv_conf = tmp_path / "resolv.conf"
    resolv_conf.write_text("nameserver 192.0.2.53\n")
    assert "forward . /etc/resolv.conf" in corefile
    return corefile.replace("forward . /etc/resolv.conf", f"forward . {resolv_conf}")


def switchboard_configmap(name):
    return next(doc for doc in documents(MANIFESTS[name])
                if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "switchboard")


def variables(name):
    """$(VAR) -> the value kubelet gives it in the main container."""
    values = {"NODE_NAME": "node-a"}
    if name == "kubeadm":
        # The kube-dns Service's environment variable (service links).
        values["KUBE_DNS_SERVICE_HOST"] = KUBE_DNS_IP
    else:
        values["KUBE_DNS_IP"] = switchboard_configmap(name)["data"]["kube-dns-ip"]
    return values


def localized(command, paths, binary, values):
    args = []
    for arg in command[1:]:
        if arg == command[0]:  # the supervisor's command: the same binary
            args.append(str(binary))
            continue
        for variable, value in values.items():
            arg = arg.replace(f"$({variable})", value)
        assert "$(" not in arg, arg  # a variable this test does not know
        for mounted, local in paths.items():
            arg = arg.replace(mounted, local)
        args.append(arg)
    return [str(binary), *args]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_every_command_in_the_manifest_runs(name, netns, switchboard_bin, tmp_path):
    paths = config_files(name, tmp_path)
    values = variables(name)
    init, (main,) = containers(daemonset(MANIFESTS[name]))
    example = DEPLOY / "examples" / "clusterip.json"
    daemon = localized(main["command"], paths, switchboard_bin, values) + [
        "--dry-run", f"--source=file:{example}"]
    runs = [daemon] + [localized(c["command"], paths, switchboard_bin, values) for c in init]
    for argv in runs:
        result = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, (argv, result.stderr[-2000:])
        if argv is daemon:
            # The rendered ruleset: the example's kube-dns Service is not
            # DNATed, its ClusterIP being a node-local DNS address.
            assert "switchboard" in result.stdout
            assert KUBE_DNS_IP not in result.stdout, result.stdout
    # The same command without --dns-local-address DNATs the kube-dns
    # ClusterIP: the check above sees the flag's effect.
    without = [arg for arg in daemon if not arg.startswith("--dns-local-address=")]
    result = subprocess.run(["ip", "netns", "exec", netns, *without], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert KUBE_DNS_IP in result.stdout


def test_kubeadm_corefile_is_the_one_kubeadm_ships():
    """tests/data/kubeadm/Corefile is kubeadm's CoreDNSConfigMap template
    (cmd/kubeadm/app/phases/addons/dns/manifests.go) rendered with
    DNSDomain cluster.local, the default; the standalone manifest ships the
    same text."""
    corefile = (KUBEADM_DATA / "Corefile").read_text()
    assert corefile.startswith(".:53 {\n    errors\n")
    assert "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n" in corefile
    assert "    forward . /etc/resolv.conf {\n       max_concurrent 1000\n    }\n" in corefile
    assert corefile.endswith("    loadbalance\n}\n")
    assert switchboard_configmap("standalone")["data"]["Corefile"] == corefile


def test_rollback_manifest_removes_switchboards_objects(netns, switchboard_bin):
    ds = daemonset(DEPLOY / "kubeadm" / "rollback-cleanup.yaml")
    init, _ = containers(ds)
    (cleanup,) = init
    assert cleanup["command"] == ["/usr/local/bin/switchboard", "--cleanup"]
    assert volume_of(ds, "/run/switchboard", cleanup)["hostPath"]["path"] == "/run/switchboard"
    # Something of switchboard's to remove: its nftables table (empty here)
    # and its node state folder (docs/daemon.md, "Node state").
    subprocess.run(["ip", "netns", "exec", netns, "nft", "add", "table", "inet", "switchboard"],
                   check=True)
    state = network_namespace.state_folder(netns)
    state.mkdir(parents=True, exist_ok=True)
    (state / "dns-zone.state").write_bytes(b"old")
    argv = localized(cleanup["command"], {}, switchboard_bin, {})
    result = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    tables = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "tables"],
                            capture_output=True, text=True, check=True).stdout
    assert "switchboard" not in tables
    assert not state.exists()


def dig_in(netns, server, name):
    argv = ["ip", "netns", "exec", netns, "dig", "+short", "+time=1", "+tries=1", f"@{server}", name]
    return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_the_daemons_command_answers_dns_on_the_kube_dns_address(name, netns, switchboard_bin,
                                                                  tmp_path):
    """The main container's command for real (a file source instead of the
    API server): the Corefile's cluster answered on the kube-dns ClusterIP
    and on 169.254.20.10, with no conntrack entry for it. The Corefile's
    `forward . /etc/resolv.conf` reads the test's resolv.conf instead, whose
    nameserver the namespace cannot reach: only cluster names are asked."""
    subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
    _, (main,) = containers(daemonset(MANIFESTS[name]))
    example = DEPLOY / "examples" / "clusterip.json"
    argv = localized(main["command"], config_files(name, tmp_path), switchboard_bin,
                     variables(name)) + [f"--source=file:{example}"]
    log = (tmp_path / "switchboard.log").open("w")
    daemon = subprocess.Popen(["ip", "netns", "exec", netns, *argv], stdout=log,
                              stderr=subprocess.STDOUT)
    try:
        nginx_service = "nginx-service.default.svc.cluster.local"
        answer = ""
        # Polled, bounded (10 s): the link and the listeners come up right
        # after start; dig fails fast until the address is there.
        for _ in range(100):
            answer = dig_in(netns, KUBE_DNS_IP, nginx_service)
            if answer == "10.96.45.12" or daemon.poll() is not None:
                break
            time.sleep(0.1)
        assert answer == "10.96.45.12", (tmp_path / "switchboard.log").read_text()[-2000:]
        assert dig_in(netns, NODE_LOCAL_DNS, nginx_service) == "10.96.45.12"
        flows = subprocess.run(["ip", "netns", "exec", netns, "conntrack", "-L", "-d", KUBE_DNS_IP],
                               capture_output=True, text=True)
        assert "0 flow entries" in flows.stderr, flows.stdout + flows.stderr
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
        log.close()
