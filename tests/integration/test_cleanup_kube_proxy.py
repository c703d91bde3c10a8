"""`switchboard --cleanup-kube-proxy` against the real kernel, one fresh
network namespace per namespace a test asks for (network_namespace).

Each test loads kube-proxy's leftovers as kube-proxy writes them (iptables-save
dumps through iptables-legacy-restore / iptables-nft-restore, kube-proxy's
nftables tables through `nft -f`, a kube-ipvs0 link with Service addresses)
next to objects that must survive (kubelet's, Docker's, a user's,
switchboard's own), runs the cleanup, and compares the namespace's whole
state with a second namespace that was loaded with the survivors only: what
is left must be byte-identical.

The rule files mark kube-proxy's lines with a leading "kp|" (see
kube_proxy_leftovers/iptables-v4.rules), so what is kube-proxy's is stated by
the data, not derived from the code under test.

IPVS itself is not in this kernel (no CONFIG_IP_VS): the virtual-server
deletion cannot run here; the test reaches the IPVS step (kube-ipvs0 has
addresses) and checks that its absence is a debug line, not a failure.
"""
import contextlib
import pathlib
import re
import subprocess

import pytest

import network_namespace

DATA = pathlib.Path(__file__).resolve().parent / "kube_proxy_leftovers"
MARK = "kp|"


@pytest.fixture
def netns(root):
    """A factory of fresh network namespaces (`lo` down, as `ip netns add` makes them),
    all deleted at the end."""
    with contextlib.ExitStack() as made:
        yield lambda: made.enter_context(network_namespace.namespace("kpc", loopback=False))


def in_ns(ns, *argv, input=None, check=True):
    return network_namespace.run_in(ns, *argv, input=input, check=check, timeout=60)


def rules_text(name, *, with_kube_proxy):
    lines = []
    for line in (DATA / name).read_text().splitlines(keepends=True):
        if line.startswith(MARK):
            if with_kube_proxy:
                lines.append(line[len(MARK):])
        else:
            lines.append(line)
    return "".join(lines)


def kube_proxy_counts(*names):
    """(jump rules, chains) kube-proxy owns in the marked files: its chains are
    the marked declarations; its jump rules are marked rules appended to a
    chain that is not one of them."""
    jumps = chains = 0
    for name in names:
        text = (DATA / name).read_text()
        for table in re.split(r"^\*", text, flags=re.M)[1:]:
            own = set(re.findall(rf"^{re.escape(MARK)}:(\S+)", table, flags=re.M))
            chains += len(own)
            for chain in re.findall(rf"^{re.escape(MARK)}-A (\S+)", table, flags=re.M):
                jumps += chain not in own
    return jumps, chains


RULE_FILES = {4: "iptables-v4.rules", 6: "iptables-v6.rules"}
TOOLS = {("legacy", 4): "iptables-legacy", ("legacy", 6): "ip6tables-legacy",
         ("nft", 4): "iptables-nft", ("nft", 6): "ip6tables-nft"}


def load_iptables(ns, backend, files, *, with_kube_proxy):
    for family, name in files.items():
        in_ns(ns, TOOLS[backend, family] + "-restore",
              input=rules_text(name, with_kube_proxy=with_kube_proxy))


def iptables_state(ns, backend):
    """Both families' iptables-save output without its dated comment lines."""
    out = []
    for family in (4, 6):
        saved = in_ns(ns, TOOLS[backend, family] + "-save").stdout
        out.append("".join(line for line in saved.splitlines(keepends=True)
                           if not line.startswith("#")))
    return "".join(out)


def nft_state(ns):
    return in_ns(ns, "nft", "list", "ruleset").stdout


def links_state(ns):
    """Every link's name, type and addresses (MAC addresses are random)."""
    out = in_ns(ns, "ip", "-details", "-oneline", "address", "show").stdout
    return sorted(re.sub(r"link/ether \S+ brd \S+", "", line) for line in out.splitlines())


def kernel_state(ns):
    return {"legacy": iptables_state(ns, "legacy"), "nft": nft_state(ns),
            "links": links_state(ns)}


def cleanup(ns, switchboard_bin, *extra):
    return in_ns(ns, switchboard_bin, "--cleanup-kube-proxy", "-v=2", *extra, check=False)


def summary(result):
    found = re.findall(r"--cleanup-kube-proxy: (.*)$", result.stderr, flags=re.M)
    assert len(found) == 1, result.stderr
    return found[0]


def assert_second_run_is_a_no_op(ns, switchboard_bin):
    before = kernel_state(ns)
    again = cleanup(ns, switchboard_bin)
    assert again.returncode == 0, again.stderr
    assert summary(again) == "nothing of kube-proxy's found"
    assert kernel_state(ns) == before


@pytest.mark.parametrize("backend", ["legacy", "nft"])
def test_iptables_mode_chains_and_jumps_go_the_rest_stays(netns, switchboard_bin, backend):
    node, expected = netns(), netns()
    load_iptables(node, backend, RULE_FILES, with_kube_proxy=True)
    load_iptables(expected, backend, RULE_FILES, with_kube_proxy=False)
    assert "KUBE-SVC-" in iptables_state(node, backend)

    result = cleanup(node, switchboard_bin)

    assert result.returncode == 0, result.stderr
    jumps, chains = kube_proxy_counts(*RULE_FILES.values())
    assert f"iptables-{backend}: {jumps} jump rules, {chains} chains" in summary(result)
    assert iptables_state(node, backend) == iptables_state(expected, backend)
    assert nft_state(node) == nft_state(expected)
    left = iptables_state(node, backend)
    for kept in ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-MARK-DROP", "USER-INPUT",
                 "DOCKER", "SWITCHBOARD-SERVICES"):
        assert kept in left
    for gone in ("KUBE-SERVICES", "KUBE-SVC-", "KUBE-SEP-", "KUBE-PROXY-CANARY"):
        assert gone not in left
    assert_second_run_is_a_no_op(node, switchboard_bin)


def test_ipvs_mode_chains_and_kube_ipvs0_go_other_links_stay(netns, switchboard_bin):
    node, expected = netns(), netns()
    for ns, with_kube_proxy in ((node, True), (expected, False)):
        load_iptables(ns, "legacy", {4: "ipvs-v4.rules"}, with_kube_proxy=with_kube_proxy)
        in_ns(ns, "ip", "link", "add", "br-user", "type", "bridge")
        in_ns(ns, "ip", "address", "add", "192.0.2.1/24", "dev", "br-user")
    # kube-proxy makes kube-ipvs0 a dummy; this kernel has no dummy links,
    # and the cleanup deletes the name whatever the type.
    in_ns(node, "ip", "link", "add", "kube-ipvs0", "type", "bridge")
    for address in ("10.96.0.1/32", "10.96.0.10/32", "fd00:10:96::1/128"):
        in_ns(node, "ip", "address", "add", address, "dev", "kube-ipvs0")

    result = cleanup(node, switchboard_bin)

    assert result.returncode == 0, result.stderr
    jumps, chains = kube_proxy_counts("ipvs-v4.rules")
    assert f"iptables-legacy: {jumps} jump rules, {chains} chains" in summary(result)
    assert "ipvs: 0 virtual servers, 1 links" in summary(result)
    # kube-ipvs0 had addresses, so the IPVS step ran and found no IPVS.
    assert "ipvs: IPVS is not loaded in this kernel" in result.stderr
    assert in_ns(node, "ip", "link", "show", "kube-ipvs0", check=False).returncode != 0
    assert kernel_state(node) == kernel_state(expected)
    assert_second_run_is_a_no_op(node, switchboard_bin)


def test_nftables_mode_tables_go_other_tables_stay(netns, switchboard_bin):
    node, expected = netns(), netns()
    in_ns(node, "nft", "-f", DATA / "nftables.nft")
    for ns in (node, expected):
        in_ns(ns, "nft", "-f", DATA / "survivors.nft")

    result = cleanup(node, switchboard_bin)

    assert result.returncode == 0, result.stderr
    assert "nftables: 2 tables" in summary(result)
    left = nft_state(node)
    assert left == nft_state(expected)
    assert "table ip kube-proxy" not in left and "table ip6 kube-proxy" not in left
    assert "table inet kube-proxy" in left and "table inet switchboard" in left
    assert_second_run_is_a_no_op(node, switchboard_bin)


def test_a_node_that_ran_every_mode_is_cleaned_in_one_run(netns, switchboard_bin):
    node, expected = netns(), netns()
    for ns, with_kube_proxy in ((node, True), (expected, False)):
        load_iptables(ns, "legacy", RULE_FILES, with_kube_proxy=with_kube_proxy)
        load_iptables(ns, "nft", RULE_FILES, with_kube_proxy=with_kube_proxy)
        in_ns(ns, "nft", "-f", DATA / "survivors.nft")
    in_ns(node, "nft", "-f", DATA / "nftables.nft")
    in_ns(node, "ip", "link", "add", "kube-ipvs0", "type", "bridge")
    in_ns(node, "ip", "address", "add", "10.96.0.1/32", "dev", "kube-ipvs0")

    result = cleanup(node, switchboard_bin)

    assert result.returncode == 0, result.stderr
    jumps, chains = kube_proxy_counts(*RULE_FILES.values())
    assert summary(result) == (
        f"iptables-legacy: {jumps} jump rules, {chains} chains; "
        f"iptables-nft: {jumps} jump rules, {chains} chains; "
        "nftables: 2 tables; ipvs: 0 virtual servers, 1 links")
    assert kernel_state(node) == kernel_state(expected)
    assert_second_run_is_a_no_op(node, switchboard_bin)


def test_a_node_where_kube_proxy_never_ran_is_left_as_it_is(netns, switchboard_bin):
    node = netns()

    result = cleanup(node, switchboard_bin)

    assert result.returncode == 0, result.stderr
    assert summary(result) == "nothing of kube-proxy's found"
    # Nothing was created: no x_tables table instantiated, no nftables table.
    assert in_ns(node, "cat", "/proc/net/ip_tables_names").stdout == ""
    assert in_ns(node, "cat", "/proc/net/ip6_tables_names").stdout == ""
    assert nft_state(node) == ""


def test_a_refused_change_exits_1_naming_it_and_changes_nothing(netns, switchboard_bin):
    node = netns()
    load_iptables(node, "legacy", RULE_FILES, with_kube_proxy=True)
    before = kernel_state(node)

    # As nobody without capabilities, every read is refused.
    result = in_ns(node, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                   "--inh-caps=-all", switchboard_bin, "--cleanup-kube-proxy", check=False)

    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "switchboard: --cleanup-kube-proxy: iptables-legacy: read /proc/net/ip_tables_names: "
        "Permission denied; ")
    assert "iptables-nft: list tables: Operation not permitted" in lines[0]
    assert kernel_state(node) == before


def test_cannot_be_combined_with_dry_run(switchboard_bin):
    result = subprocess.run([switchboard_bin, "--cleanup-kube-proxy", "--dry-run"],
                            capture_output=True, text=True, timeout=30)

    assert result.returncode == 2
    assert result.stderr.strip() == (
        "switchboard: --cleanup-kube-proxy: cannot be combined with --dry-run")
