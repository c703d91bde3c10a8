// The default of an empty nodePortAddresses by mode: kube-proxy's nftables
// mode takes the node's primary IPs (server_linux.go platformApplyDefaults),
// its iptables and ipvs modes, and its empty mode (iptables), every local
// address. switchboard's own default mode, nftables, keeps every address:
// only a mode named nftables gets the primary default.
#include <catch.hpp>

#include "proxy/options/flags.h"
#include "tests/unit/proxy/options/config_file.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::testing;

namespace {

struct NodePortCase {
    const char* name;
    std::vector<std::string> flags;
    // The file's body after its apiVersion and kind; nullptr: no --config.
    const char* config_body;
    ProxyMode mode;
    bool primary;
    size_t cidrs;
};

const std::vector<NodePortCase> kCases = {
    // The command line alone.
    {"no flags: switchboard's nftables, every address",
     {},
     nullptr,
     ProxyMode::kNftables,
     false,
     0},
    {"--proxy-mode=nftables: primary",
     {"--proxy-mode=nftables"},
     nullptr,
     ProxyMode::kNftables,
     true,
     0},
    {"--proxy-mode nftables: primary",
     {"--proxy-mode", "nftables"},
     nullptr,
     ProxyMode::kNftables,
     true,
     0},
    {"--proxy-mode=iptables: every address",
     {"--proxy-mode=iptables"},
     nullptr,
     ProxyMode::kIptables,
     false,
     0},
    {"--proxy-mode=ipvs: every address",
     {"--proxy-mode=ipvs"},
     nullptr,
     ProxyMode::kIpvs,
     false,
     0},
    {"--proxy-mode=nftables with CIDRs keeps them",
     {"--proxy-mode=nftables", "--nodeport-addresses=10.0.0.0/8"},
     nullptr,
     ProxyMode::kNftables,
     false,
     1},
    {"--proxy-mode=nftables with an empty --nodeport-addresses: primary",
     {"--proxy-mode=nftables", "--nodeport-addresses="},
     nullptr,
     ProxyMode::kNftables,
     true,
     0},
    {"--proxy-mode=iptables --nodeport-addresses=primary",
     {"--proxy-mode=iptables", "--nodeport-addresses=primary"},
     nullptr,
     ProxyMode::kIptables,
     true,
     0},
    // The file.
    {"file without mode: kube-proxy's iptables default, every address",
     {},
     "",
     ProxyMode::kNftables,
     false,
     0},
    {"file mode \"\": every address", {}, "mode: \"\"\n", ProxyMode::kNftables, false, 0},
    {"file mode nftables: primary", {}, "mode: nftables\n", ProxyMode::kNftables, true, 0},
    {"file mode nftables, nodePortAddresses null: primary",
     {},
     "mode: nftables\nnodePortAddresses: null\n",
     ProxyMode::kNftables,
     true,
     0},
    {"file mode nftables, nodePortAddresses []: primary",
     {},
     "mode: nftables\nnodePortAddresses: []\n",
     ProxyMode::kNftables,
     true,
     0},
    {"file mode nftables with CIDRs keeps them",
     {},
     "mode: nftables\nnodePortAddresses: [10.0.0.0/8, fd00::/64]\n",
     ProxyMode::kNftables,
     false,
     2},
    {"file mode iptables: every address", {}, "mode: iptables\n", ProxyMode::kIptables, false, 0},
    {"file mode ipvs: every address", {}, "mode: ipvs\n", ProxyMode::kIpvs, false, 0},
    {"file mode iptables, nodePortAddresses [primary]",
     {},
     "mode: iptables\nnodePortAddresses: [primary]\n",
     ProxyMode::kIptables,
     true,
     0},
    // --proxy-mode is ignored with --config: the file's mode decides.
    {"--proxy-mode=nftables over a file without mode: every address",
     {"--proxy-mode=nftables"},
     "",
     ProxyMode::kNftables,
     false,
     0},
    {"--proxy-mode=iptables over a file of mode nftables: primary",
     {"--proxy-mode=iptables"},
     "mode: nftables\n",
     ProxyMode::kNftables,
     true,
     0},
};

}  // namespace

TEST_CASE("an empty nodePortAddresses means primary in a mode named nftables only") {
    for (const auto& test : kCases) {
        INFO(test.name);
        const Options options =
            test.config_body == nullptr
                ? options_ok(parse_flags(test.flags, environment_with({})))
                : options_ok(parse_with_config_text(
                      std::string("apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
                                  "kind: KubeProxyConfiguration\n") +
                          test.config_body,
                      test.flags));
        CHECK(options.proxy_mode == test.mode);
        CHECK(options.nodeport_primary == test.primary);
        CHECK(options.backend.nodeport_addresses.size() == test.cidrs);
    }
}
