"""The manifests in deploy/: they parse, carry what a kube-proxy replacement needs, and
every command line they give is one the binary accepts.

Each container's command runs for real, in a network namespace of its own
(so --init-only's sysctls and --cleanup-kube-proxy touch only that
namespace): the daemon's with --dry-run on a file source, the init
containers as they are. Paths the manifests mount (the kube-proxy ConfigMap
at /var/lib/kube-proxy, /etc/switchboard) are mapped onto copies of the
manifest's own files or of kubeadm's (tests/data/kubeadm).
"""
import pathlib
import subprocess
import uuid

import pytest
import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEPLOY = ROOT / "deploy"
KUBEADM_DATA = ROOT / "tests" / "data" / "kubeadm"
MANIFESTS = {
    "kubeadm": DEPLOY / "kubeadm" / "switchboard.yaml",
    "standalone": DEPLOY / "switchboard.yaml",
}
CAPABILITIES = {"NET_ADMIN", "NET_RAW", "SYS_RESOURCE"}


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
    # kube-proxy's command line shape: a config file and the node name.
    assert main["command"][0] == "/usr/local/bin/switchboard"
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


def test_kubeadm_manifest_reuses_kubeadms_configmap_and_service_account():
    ds = daemonset(MANIFESTS["kubeadm"])
    pod = ds["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kube-proxy"
    _, (main,) = containers(ds)
    assert main["command"] == ["/usr/local/bin/switchboard",
                               "--config=/var/lib/kube-proxy/config.conf",
                               "--hostname-override=$(NODE_NAME)"]
    assert volume_of(ds, "/var/lib/kube-proxy", main)["configMap"]["name"] == "kube-proxy"
    # Nothing but the DaemonSet: kubeadm already made the RBAC and the ConfigMap.
    assert [doc["kind"] for doc in documents(MANIFESTS["kubeadm"])] == ["DaemonSet"]


def test_standalone_manifest_binds_system_node_proxier_and_nothing_more():
    docs = documents(MANIFESTS["standalone"])
    kinds = [doc["kind"] for doc in docs]
    assert "ClusterRole" not in kinds and "Role" not in kinds
    bindings = [doc for doc in docs if doc["kind"] in ("ClusterRoleBinding", "RoleBinding")]
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


@pytest.fixture
def netns(root):
    name = f"sbdeploy-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    yield name
    subprocess.run(["ip", "netns", "del", name], check=False)


def config_files(name, tmp_path):
    """Manifest path -> local copy, for the config files the manifest mounts."""
    if name == "kubeadm":
        folder = tmp_path / "kube-proxy"
        folder.mkdir()
        for file in ("config.conf", "kubeconfig.conf"):
            (folder / file).write_text((KUBEADM_DATA / file).read_text())
        return {"/var/lib/kube-proxy/": f"{folder}/"}
    config = next(doc for doc in documents(MANIFESTS[name])
                  if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "switchboard")
    folder = tmp_path / "switchboard"
    folder.mkdir()
    for file, text in config["data"].items():
        (folder / file).write_text(text)
    return {"/etc/switchboard/": f"{folder}/"}


def localized(command, paths, binary):
    args = []
    for arg in command[1:]:
        arg = arg.replace("$(NODE_NAME)", "node-a")
        for mounted, local in paths.items():
            arg = arg.replace(mounted, local)
        args.append(arg)
    return [str(binary), *args]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_every_command_in_the_manifest_runs(name, netns, switchboard_bin, tmp_path):
    paths = config_files(name, tmp_path)
    init, (main,) = containers(daemonset(MANIFESTS[name]))
    example = DEPLOY / "examples" / "clusterip.json"
    runs = [localized(main["command"], paths, switchboard_bin)
            + ["--dry-run", f"--source=file:{example}"]]
    runs += [localized(c["command"], paths, switchboard_bin) for c in init]
    for argv in runs:
        result = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, (argv, result.stderr[-2000:])
        if "--dry-run" in argv:
            assert "switchboard" in result.stdout  # the rendered ruleset


def test_rollback_manifest_removes_switchboards_objects(netns, switchboard_bin):
    ds = daemonset(DEPLOY / "kubeadm" / "rollback-cleanup.yaml")
    init, _ = containers(ds)
    (cleanup,) = init
    assert cleanup["command"] == ["/usr/local/bin/switchboard", "--cleanup"]
    # Something of switchboard's to remove: its nftables table (empty here).
    subprocess.run(["ip", "netns", "exec", netns, "nft", "add", "table", "inet", "switchboard"],
                   check=True)
    argv = localized(cleanup["command"], {}, switchboard_bin)
    result = subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    tables = subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "tables"],
                            capture_output=True, text=True, check=True).stdout
    assert "switchboard" not in tables
