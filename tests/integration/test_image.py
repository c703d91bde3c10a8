"""The runtime image (docs/image.md): packed by deploy/image/pack, run by podman.

The session packs the test build's binary with the same script `./dev image`
uses for the release binary (the script strips it), so no second compile.
Then, in a throw-away podman storage under the session's temp dir:
`--version`, `plan` on every deploy/examples file (read-only mount, against
the hand-written expected plans), a second pack giving the same archive
bytes, and one datapath scenario: the containerised daemon in a netbed
node's namespace (`--network ns:`), with only the capabilities
deploy/switchboard.yaml grants and not privileged, programs a ClusterIP that
a client Pod reaches and answers `dig` on its node-local kube-dns address.

Needs root, mmdebstrap, umoci, podman, runc, objcopy and Debian's mirror. A
missing tool is a skip outside CI and a failure with CI=true.

How podman runs here: image_podman.py.
"""
import json
import pathlib
import shutil

import netbed
import pytest
from conftest import IN_CI
from image_podman import PACK, Podman, pack, sha256, version_output
from node_dns import KUBE_DNS, KUBERNETES, NODE_LOCAL, WEB, kube_dns_cluster, web_bed
from network_namespace import in_ns, run

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "deploy" / "examples"
EXPECTED = pathlib.Path(__file__).resolve().parent / "expected"
TOOLS = ("mmdebstrap", "umoci", "podman", "runc", "objcopy")
# The daemon container's capabilities in deploy/switchboard.yaml.
CAPABILITIES = "NET_ADMIN,NET_RAW,SYS_RESOURCE,NET_BIND_SERVICE"
LAYOUT = {"node-a": ["coredns", "web-1", "client"]}


@pytest.fixture(scope="session")
def tools(root):
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        message = f"missing {', '.join(missing)}: ./dev setup installs them"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def packed(tools, switchboard_bin, tmp_path_factory):
    """The image packed from the test build: (archive, digest)."""
    return pack(switchboard_bin, tmp_path_factory.mktemp("image"))


@pytest.fixture(scope="session")
def podman(packed, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("podman")
    engine = Podman(workdir, packed[0])
    try:
        yield engine
    finally:
        engine.close()
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_archive_carries_the_manifests_tag_and_its_digest(packed, switchboard_bin):
    archive, digest = packed
    version = version_output(switchboard_bin).split()[1]
    assert archive.name == f"switchboard-{version}.oci.tar"
    for manifest in ("deploy/switchboard.yaml", "deploy/kubeadm/switchboard.yaml"):
        assert f"image: switchboard:{version}" in (ROOT / manifest).read_text(), manifest
    sbom = archive.with_name(f"switchboard-{version}.sbom.txt").read_text().splitlines()
    packages = {line.split()[0] for line in sbom}
    assert {"libc6", "libstdc++6", "libnftnl11", "libssl3", "ca-certificates"} <= packages, sbom
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64, digest


def test_a_second_pack_gives_the_same_bytes(packed, switchboard_bin, tmp_path):
    archive, digest = packed
    again, again_digest = pack(switchboard_bin, tmp_path)
    assert (again_digest, sha256(again)) == (digest, sha256(archive))


def test_podman_loads_it_under_the_manifests_tag_and_it_runs_version(podman, switchboard_bin):
    host = version_output(switchboard_bin)
    assert podman.reference == f"localhost/switchboard:{host.split()[1]}"
    result = podman.run(podman.reference, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == host


@pytest.mark.parametrize("name", sorted(path.stem for path in EXAMPLES.glob("*.json")))
def test_plan_of_example_inside_the_container(podman, name):
    result = podman.run("--network=none", f"--volume={EXAMPLES}:/examples:ro", podman.reference,
                        "plan", f"--source=file:/examples/{name}.json", "--hostname-override=node-a")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((EXPECTED / f"{name}.plan.json").read_text())


class ContainerSwitchboard(netbed.Switchboard):
    """netbed's daemon, run by podman in the node's namespace: the cluster folder
    mounted read-only, the node state on a fresh directory at /run/switchboard (the
    manifests' hostPath), the manifests' capabilities and nothing more."""

    def __init__(self, bed, binary, mode, podman, **options):
        super().__init__(bed, binary, mode, **options)
        self.podman = podman
        self.state = bed.workdir / "container-state"
        self.state.mkdir(exist_ok=True)

    def command(self):
        _binary, *args = self.argv()
        return self.podman.run_argv(
            f"--network=ns:/run/netns/{self.node.ns}", "--cap-drop=all", f"--cap-add={CAPABILITIES}",
            f"--volume={self.folder}:{self.folder}:ro", f"--volume={self.state}:/run/switchboard",
            self.podman.reference, *map(str, args))


@pytest.fixture(scope="module")
def bed(root):
    with web_bed(LAYOUT) as bed:
        yield bed


def dig(bed, server, name):
    argv = ["dig", "+short", "+time=2", "+tries=1", f"@{server}", name]
    return run(in_ns(bed.pods["client"].ns, argv), check=False).stdout.strip()


def test_the_container_programs_a_cluster_ip_and_answers_dns(bed, podman, switchboard_bin):
    daemon = ContainerSwitchboard(bed, switchboard_bin, "nftables", podman, extra_args=[
        f"--dns-local-address={KUBE_DNS},{NODE_LOCAL}",
        "--dns-upstream=127.0.0.2",  # nothing there: only cluster names are asked
    ])
    daemon.set_cluster(kube_dns_cluster(bed))
    daemon.start()
    try:
        answers = bed.probe("client", WEB, 80)
        assert [answer.pod for answer in answers] == ["web-1"], (answers, daemon.log_tail())
        # The kube-dns endpoint has nothing on port 53: an answer is the container's.
        for server in (KUBE_DNS, NODE_LOCAL):
            assert dig(bed, server, "web.default.svc.cluster.local") == WEB, daemon.log_tail()
            assert dig(bed, server, "kubernetes.default.svc.cluster.local") == KUBERNETES
    finally:
        daemon.close()


def test_the_containerfile_installs_the_packages_pack_unpacks():
    # deploy/Containerfile is for users with a registry; it must give the same libraries.
    script = PACK.read_text()
    listed = script[script.index("PACKAGES=(") + len("PACKAGES=("):script.index("\n)\n")]
    packed = {word for line in listed.splitlines() if not line.strip().startswith("#")
              for word in line.split()}
    containerfile = (ROOT / "deploy" / "Containerfile").read_text()
    install = containerfile[containerfile.index("--no-install-recommends"):containerfile.index("&& \\\n    rm")]
    installed = {word for word in install.split() if word not in ("--no-install-recommends", "\\")}
    # libc6 comes with the slim base.
    assert installed == packed - {"libc6"}
    assert 'ENTRYPOINT ["/usr/local/bin/switchboard"]' in containerfile
    assert "--config.entrypoint=/usr/local/bin/switchboard" in script
