// kube-proxy's own test tables as switchboard's specification: the inputs
// and verdicts of pkg/proxy/apis/config/validation/validation_test.go and
// cmd/kube-proxy/app/options_test.go (kube-proxy 1.33), transcribed as data
// and fed through the program's path (the command line, or):
// a --config file, kube-proxy's defaulting, then validation. A value that
// kube-proxy's Validate() refuses may load after defaulting (v1alpha1's
// AppendPortIfNeeded gives "0.0.0.0" its port): the program's verdict is the
// one written here. Where switchboard's verdict still differs, the case says
// so and docs/kube-proxy-config.md ("Where switchboard differs from
// kube-proxy's tables") says why.
#include <catch.hpp>

#include <map>

#include "proxy/options/flags.h"
#include "tests/unit/proxy/options/config_file.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::testing;
using namespace std::chrono_literals;

namespace {

// A file as field paths ("iptables.syncPeriod") and their YAML values.
using Fields = std::map<std::string, std::string>;

// kube-proxy's baseConfig of TestValidateKubeProxyConfiguration, as a
// v1alpha1 file (MasqueradeAll is iptables.masqueradeAll there).
const Fields kBaseV1alpha1 = {
    {"bindAddress", "192.168.59.103"},
    {"healthzBindAddress", "0.0.0.0:10256"},
    {"metricsBindAddress", "127.0.0.1:10249"},
    {"detectLocalMode", "ClusterCIDR"},
    {"clusterCIDR", "192.168.59.0/24"},
    {"iptables.syncPeriod", "5s"},
    {"iptables.minSyncPeriod", "2s"},
    {"iptables.masqueradeAll", "true"},
    {"configSyncPeriod", "1s"},
    {"conntrack.maxPerCore", "1"},
    {"conntrack.min", "1"},
    {"conntrack.tcpEstablishedTimeout", "5s"},
    {"conntrack.tcpCloseWaitTimeout", "5s"},
    {"logging.format", "text"},
};

// The same, as a v1alpha2 file.
const Fields kBaseV1alpha2 = {
    {"nodeIPOverride", "[192.168.59.103]"},
    {"detectLocalMode", "ClusterCIDR"},
    {"detectLocal.clusterCIDRs", "[192.168.59.0/24]"},
    {"syncPeriod", "5s"},
    {"minSyncPeriod", "2s"},
    {"configSyncPeriod", "1s"},
    {"linux.masqueradeAll", "true"},
    {"linux.conntrack.maxPerCore", "1"},
    {"linux.conntrack.min", "1"},
    {"linux.conntrack.tcpEstablishedTimeout", "5s"},
    {"linux.conntrack.tcpCloseWaitTimeout", "5s"},
    {"logging.format", "text"},
};

constexpr const char* kRemove = "<remove>";

struct TableCase {
    const char* kube_proxy_case;  // "TestFunction: case name"
    bool v1alpha2;
    Fields changes;  // over the base; kRemove drops a field
    // "" : loads; else a part of switchboard's one-line error.
    const char* error;
};

// Nested YAML from dotted paths (the map keeps siblings together).
std::string render(const Fields& fields) {
    std::string text;
    std::vector<std::string> open;  // the maps the last line is in
    for (const auto& [path, value] : fields) {
        std::vector<std::string> parts;
        for (size_t start = 0, dot = 0; dot != std::string::npos; start = dot + 1) {
            dot = path.find('.', start);
            parts.push_back(path.substr(start, dot == std::string::npos ? dot : dot - start));
        }
        size_t common = 0;
        while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) {
            ++common;
        }
        open.resize(common);
        for (size_t i = common; i + 1 < parts.size(); ++i) {
            text += std::string(2 * i, ' ') + parts[i] + ":\n";
            open.push_back(parts[i]);
        }
        text += std::string(2 * (parts.size() - 1), ' ') + parts.back() + ": " + value + "\n";
    }
    return text;
}

Result<Options> load(const TableCase& test) {
    Fields fields = test.v1alpha2 ? kBaseV1alpha2 : kBaseV1alpha1;
    for (const auto& [path, value] : test.changes) {
        if (value == kRemove) {
            fields.erase(path);
        } else {
            fields[path] = value;
        }
    }
    const std::string text = std::string("apiVersion: kubeproxy.config.k8s.io/") +
                             (test.v1alpha2 ? "v1alpha2" : "v1alpha1") +
                             "\nkind: KubeProxyConfiguration\n" + render(fields);
    return parse_with_config_text(text);
}

void check_cases(const std::vector<TableCase>& cases) {
    for (const auto& test : cases) {
        INFO(test.kube_proxy_case);
        auto options = load(test);
        if (std::string(test.error).empty()) {
            INFO((options ? std::string("ok") : options.error().message));
            CHECK(options.ok());
        } else {
            REQUIRE_FALSE(options.ok());
            INFO(options.error().message);
            CHECK(options.error().message.find(test.error) != std::string::npos);
        }
    }
}

const bool kV1 = false;
const bool kV2 = true;

}  // namespace

TEST_CASE("kube-proxy's TestValidateKubeProxyConfiguration, through --config") {
    check_cases({
        {"basic config, unspecified Mode", kV1, {}, ""},
        {"Mode specified, extra mode-specific configs", kV1, {{"mode", "ipvs"}}, ""},
        {"empty HealthzBindAddress", kV1, {{"healthzBindAddress", "\"\""}}, ""},
        {"empty NodeIPOverride", kV1, {{"bindAddress", kRemove}}, ""},
        {"IPv6",
         kV1,
         {{"bindAddress", "fd00:192:168:59::103"},
          {"healthzBindAddress", "\"\""},
          {"metricsBindAddress", "\"[::1]:10249\""},
          {"clusterCIDR", "fd00:192:168:59::/64"}},
         ""},
        {"alternate healthz port", kV1, {{"healthzBindAddress", "0.0.0.0:12345"}}, ""},
        {"ClusterCIDR is wrong IP family", kV1, {{"clusterCIDR", "fd00:192:168:59::/64"}}, ""},
        {"ClusterCIDR is dual-stack",
         kV1,
         {{"clusterCIDR", "192.168.59.0/24,fd00:192:168::/64"}},
         ""},
        {"LocalModeInterfaceNamePrefix",
         kV1,
         {{"detectLocalMode", "InterfaceNamePrefix"},
          {"detectLocal.interfaceNamePrefix", "vethabcde"}},
         ""},
        {"LocalModeBridgeInterface",
         kV1,
         {{"detectLocalMode", "BridgeInterface"}, {"detectLocal.bridgeInterface", "avz"}},
         ""},
        {"invalid NodeIPOverride",
         kV1,
         {{"bindAddress", "10.10.12.11:2000"}},
         "bindAddress: \"10.10.12.11:2000\" is not an IP address"},
        // Validate() wants IP:port; v1alpha1's defaulting appends the port first.
        {"invalid HealthzBindAddress (loads: defaulting appends :10256)",
         kV1,
         {{"healthzBindAddress", "0.0.0.0"}},
         ""},
        {"invalid MetricsBindAddress (loads: defaulting appends :10249)",
         kV1,
         {{"metricsBindAddress", "127.0.0.1"}},
         ""},
        {"SyncPeriod must be > 0",
         kV1,
         {{"iptables.syncPeriod", "-5s"}},
         "iptables.syncPeriod: \"-5s\" is negative"},
        {"MinSyncPeriod must be > 0",
         kV1,
         {{"iptables.minSyncPeriod", "-2s"}},
         "iptables.minSyncPeriod: \"-2s\" is negative"},
        {"SyncPeriod must be >= MinSyncPeriod",
         kV1,
         {{"iptables.syncPeriod", "1s"}, {"iptables.minSyncPeriod", "5s"}},
         "iptables.syncPeriod: 1s is shorter than iptables.minSyncPeriod 5s"},
        {"invalid DetectLocalMode", kV1, {{"detectLocalMode", "Guess"}}, "detectLocalMode: "},
        // The same table in v1alpha2's layout.
        {"basic config (v1alpha2)", kV2, {}, ""},
        {"empty NodeIPOverride (v1alpha2)", kV2, {{"nodeIPOverride", "[]"}}, ""},
        {"IPv6 (v1alpha2)",
         kV2,
         {{"nodeIPOverride", "[fd00:192:168:59::103]"},
          {"metricsBindAddresses", "[\"::1/128\"]"},
          {"detectLocal.clusterCIDRs", "[fd00:192:168:59::/64]"}},
         ""},
        {"alternate healthz port (v1alpha2)", kV2, {{"healthzBindPort", "12345"}}, ""},
        {"ClusterCIDR is dual-stack (v1alpha2)",
         kV2,
         {{"detectLocal.clusterCIDRs", "[192.168.59.0/24, fd00:192:168::/64]"}},
         ""},
        {"invalid NodeIPOverride (v1alpha2)",
         kV2,
         {{"nodeIPOverride", "[\"10.10.12.11:2000\"]"}},
         "nodeIPOverride: \"10.10.12.11:2000\" is not an IP address"},
        {"SyncPeriod must be > 0 (v1alpha2)",
         kV2,
         {{"syncPeriod", "-5s"}},
         "syncPeriod: \"-5s\" is negative"},
        {"MinSyncPeriod must be > 0 (v1alpha2)",
         kV2,
         {{"minSyncPeriod", "-2s"}},
         "minSyncPeriod: \"-2s\" is negative"},
        {"SyncPeriod must be >= MinSyncPeriod (v1alpha2)",
         kV2,
         {{"syncPeriod", "1s"}, {"minSyncPeriod", "5s"}},
         "syncPeriod: 1s is shorter than minSyncPeriod 5s"},
    });
}

TEST_CASE("kube-proxy's tables of the masquerade bit, IPVS and Linux settings, through --config") {
    check_cases({
        {"IPTables: valid custom MasqueradeBit", kV1, {{"iptables.masqueradeBit", "5"}}, ""},
        {"IPTables: MasqueradeBit cannot be < 0",
         kV1,
         {{"iptables.masqueradeBit", "-10"}},
         "iptables.masqueradeBit: "},
        {"IPVS: Timeout can be 0",
         kV2,
         {{"mode", "ipvs"},
          {"ipvs.masqueradeBit", "5"},
          {"ipvs.tcpTimeout", "0s"},
          {"ipvs.tcpFinTimeout", "0s"},
          {"ipvs.udpTimeout", "0s"}},
         ""},
        {"IPVS: Timeout > 0",
         kV2,
         {{"mode", "ipvs"},
          {"ipvs.masqueradeBit", "10"},
          {"ipvs.tcpTimeout", "1s"},
          {"ipvs.tcpFinTimeout", "2s"},
          {"ipvs.udpTimeout", "3s"}},
         ""},
        {"IPVS: TCP Timeout < 0",
         kV1,
         {{"mode", "ipvs"}, {"ipvs.tcpTimeout", "-1s"}},
         "ipvs.tcpTimeout: \"-1s\" is negative"},
        {"IPVS: TCPFin Timeout < 0",
         kV1,
         {{"mode", "ipvs"}, {"ipvs.tcpFinTimeout", "-1s"}},
         "ipvs.tcpFinTimeout: \"-1s\" is negative"},
        {"IPVS: UDP Timeout < 0",
         kV1,
         {{"mode", "ipvs"}, {"ipvs.udpTimeout", "-1s"}},
         "ipvs.udpTimeout: \"-1s\" is negative"},
        {"IPVS: MasqueradeBit cannot be < 0",
         kV2,
         {{"mode", "ipvs"}, {"ipvs.masqueradeBit", "-1"}},
         "ipvs.masqueradeBit: "},
        {"IPVS: MasqueradeBit cannot be > 31",
         kV2,
         {{"mode", "ipvs"}, {"ipvs.masqueradeBit", "32"}},
         "ipvs.masqueradeBit: "},
        {"Linux: valid 5 second timeouts",
         kV1,
         {{"conntrack.udpTimeout", "5s"},
          {"conntrack.udpStreamTimeout", "5s"},
          {"oomScoreAdj", "0"}},
         ""},
        {"Linux: valid duration equal to 0 second timeout",
         kV1,
         {{"conntrack.tcpEstablishedTimeout", "0s"},
          {"conntrack.tcpCloseWaitTimeout", "0s"},
          {"conntrack.udpTimeout", "0s"},
          {"conntrack.udpStreamTimeout", "0s"}},
         ""},
        {"Linux: invalid MaxPerCore < 0",
         kV1,
         {{"conntrack.maxPerCore", "-1"}},
         "conntrack.maxPerCore: "},
        {"Linux: invalid minimum < 0", kV1, {{"conntrack.min", "-1"}}, "conntrack.min: "},
        {"Linux: invalid TCPEstablishedTimeout < 0",
         kV1,
         {{"conntrack.tcpEstablishedTimeout", "-5s"}},
         "conntrack.tcpEstablishedTimeout: "},
        {"Linux: invalid TCPCloseWaitTimeout < 0",
         kV1,
         {{"conntrack.tcpCloseWaitTimeout", "-5s"}},
         "conntrack.tcpCloseWaitTimeout: "},
        {"Linux: invalid UDPTimeout < 0",
         kV2,
         {{"linux.conntrack.udpTimeout", "-5s"}},
         "linux.conntrack.udpTimeout: "},
        {"Linux: invalid UDPStreamTimeout < 0",
         kV2,
         {{"linux.conntrack.udpStreamTimeout", "-5s"}},
         "linux.conntrack.udpStreamTimeout: "},
        {"Linux: OOMScoreAdj 999", kV2, {{"linux.oomScoreAdj", "999"}}, ""},
        {"Linux: invalid OOMScoreAdj < -1000", kV1, {{"oomScoreAdj", "-1001"}}, "oomScoreAdj: "},
        {"Linux: invalid OOMScoreAdj > 1000",
         kV2,
         {{"linux.oomScoreAdj", "1001"}},
         "linux.oomScoreAdj: "},
    });
}

TEST_CASE("kube-proxy's tables of the mode, addresses and CIDRs, through --config") {
    check_cases({
        {"ProxyMode: blank mode should default", kV1, {{"mode", "\"\""}}, ""},
        {"ProxyMode: iptables is allowed", kV1, {{"mode", "iptables"}}, ""},
        {"ProxyMode: ipvs is allowed", kV1, {{"mode", "ipvs"}}, ""},
        {"ProxyMode: nftables is allowed", kV1, {{"mode", "nftables"}}, ""},
        {"ProxyMode: winkernel is not allowed", kV1, {{"mode", "kernelspace"}}, "mode: "},
        {"ProxyMode: invalid mode non-existent", kV1, {{"mode", "non-existing"}}, "mode: "},
        {"HostPort: all IPs", kV1, {{"healthzBindAddress", "0.0.0.0:10256"}}, ""},
        {"HostPort: localhost", kV1, {{"healthzBindAddress", "127.0.0.1:10256"}}, ""},
        {"HostPort: specific IP", kV1, {{"healthzBindAddress", "10.10.10.10:10256"}}, ""},
        {"HostPort: missing port (loads: defaulting appends it)",
         kV1,
         {{"healthzBindAddress", "10.10.10.10"}},
         ""},
        {"HostPort: digits outside of 1-255",
         kV1,
         {{"healthzBindAddress", "123.456.789.10:12345"}},
         "healthzBindAddress: "},
        {"HostPort: invalid named-port",
         kV1,
         {{"healthzBindAddress", "10.10.10.10:foo"}},
         "healthzBindAddress: "},
        {"HostPort: port cannot be 0",
         kV1,
         {{"healthzBindAddress", "10.10.10.10:0"}},
         "healthzBindAddress: "},
        {"HostPort: port is greater than allowed range",
         kV1,
         {{"healthzBindAddress", "10.10.10.10:65536"}},
         "healthzBindAddress: "},
        {"NodePortAddress: no addresses", kV1, {{"nodePortAddresses", "[]"}}, ""},
        {"NodePortAddress: valid 1", kV1, {{"nodePortAddresses", "[127.0.0.0/8]"}}, ""},
        {"NodePortAddress: valid 2", kV1, {{"nodePortAddresses", "[0.0.0.0/0]"}}, ""},
        {"NodePortAddress: valid 3", kV1, {{"nodePortAddresses", "[\"::/0\"]"}}, ""},
        {"NodePortAddress: valid 4",
         kV1,
         {{"nodePortAddresses", "[127.0.0.1/32, 1.2.3.0/24]"}},
         ""},
        {"NodePortAddress: valid 6", kV1, {{"nodePortAddresses", "[\"::1/128\"]"}}, ""},
        {"NodePortAddress: valid 9",
         kV1,
         {{"nodePortAddresses", "[10.20.0.0/16, 100.200.0.0/16]"}},
         ""},
        {"NodePortAddress: valid 11", kV1, {{"nodePortAddresses", "[\"2001:db8::/32\"]"}}, ""},
        {"NodePortAddress: primary", kV1, {{"nodePortAddresses", "[primary]"}}, ""},
        {"NodePortAddress: invalid foo address",
         kV1,
         {{"nodePortAddresses", "[foo]"}},
         "nodePortAddresses: \"foo\" is not a CIDR"},
        {"NodePortAddress: invalid octet address",
         kV1,
         {{"nodePortAddresses", "[10.0.0.0/0, 1.2.3]"}},
         "nodePortAddresses: \"1.2.3\""},
        {"NodePortAddress: address cannot be 0",
         kV1,
         {{"nodePortAddresses", "[127.0.0.1/32, \"0\", 1.2.3.0/24]"}},
         "nodePortAddresses: \"0\""},
        {"NodePortAddress: address missing subnet range",
         kV1,
         {{"nodePortAddresses", "[127.0.0.1/32, 10.20.30.40, 1.2.3.0/24]"}},
         "nodePortAddresses: \"10.20.30.40\""},
        {"NodePortAddress: missing ipv6 subnet ranges",
         kV1,
         {{"nodePortAddresses", "[\"::0\", \"::1\", \"2001:db8::/32\"]"}},
         "nodePortAddresses: \"::0\""},
        {"NodePortAddress: invalid ipv6 ip format",
         kV1,
         {{"nodePortAddresses", "[\"::1/128\", \"2001:db8::/32\", \"2001:db8:xyz/64\"]"}},
         "nodePortAddresses: \"2001:db8:xyz/64\""},
        {"NodePortAddress: invalid primary/CIDR mix 1",
         kV1,
         {{"nodePortAddresses", "[primary, 127.0.0.1/32]"}},
         "nodePortAddresses: \"primary\""},
        {"NodePortAddress: invalid primary/CIDR mix 2",
         kV1,
         {{"nodePortAddresses", "[127.0.0.1/32, primary]"}},
         "nodePortAddresses: \"primary\""},
        {"ExcludeCIDRs: valid 4", kV1, {{"ipvs.excludeCIDRs", "[127.0.0.1/32, 1.2.3.0/24]"}}, ""},
        {"ExcludeCIDRs: valid 3", kV1, {{"ipvs.excludeCIDRs", "[\"::/0\"]"}}, ""},
        {"ExcludeCIDRs: invalid foo address",
         kV1,
         {{"ipvs.excludeCIDRs", "[foo]"}},
         "ipvs.excludeCIDRs: \"foo\" is not a CIDR"},
        {"ExcludeCIDRs: address missing subnet range",
         kV1,
         {{"ipvs.excludeCIDRs", "[127.0.0.1/32, 10.20.30.40]"}},
         "ipvs.excludeCIDRs: "},
        {"ExcludeCIDRs: invalid ipv6 ip format",
         kV1,
         {{"ipvs.excludeCIDRs", "[\"2001:db8:xyz/64\"]"}},
         "ipvs.excludeCIDRs: "},
        {"DetectLocal: interfacePrefix is empty",
         kV1,
         {{"detectLocalMode", "InterfaceNamePrefix"}, {"detectLocal.interfaceNamePrefix", "\"\""}},
         "detectLocal.interfaceNamePrefix: must be set"},
        {"DetectLocal: bridgeInterfaceName is empty",
         kV1,
         {{"detectLocalMode", "BridgeInterface"}, {"detectLocal.interfaceNamePrefix", "eth0"}},
         "detectLocal.bridgeInterface: must be set"},
        {"DetectLocal: invalid number of cluster cidrs",
         kV2,
         {{"detectLocal.clusterCIDRs", "[192.168.59.0/24, fd00:192:168::/64, 10.0.0.0/16]"}},
         "detectLocal.clusterCIDRs: "},
        {"DetectLocal: invalid cluster cidr",
         kV2,
         {{"detectLocal.clusterCIDRs", "[192.168.59.0]"}},
         "detectLocal.clusterCIDRs: "},
        {"DetectLocal: empty cluster cidrs with cluster cidr mode",
         kV2,
         {{"detectLocal.clusterCIDRs", "[]"}},
         ""},
        {"DualStackCIDRStrings: multiple ipv6 cidrs",
         kV1,
         {{"clusterCIDR", "fd00:10:96::/112,fde4:8dba:82e1::/48"}},
         "clusterCIDR: "},
        {"DualStackCIDRStrings: malformed ipv4 cidr",
         kV1,
         {{"clusterCIDR", "\"fde4:8dba:82e1::/48,172.16.200.0:24\""}},
         "clusterCIDR: "},
        {"DualStackCIDRStrings: malformed ipv6 cidr",
         kV1,
         {{"clusterCIDR", "\"fd00:10:96::,192.168.0.0/16\""}},
         "clusterCIDR: "},
        {"DualStackIPStrings: single ipv6", kV2, {{"nodeIPOverride", "[\"fd00:10:96::\"]"}}, ""},
        {"DualStackIPStrings: ipv6 host-port",
         kV2,
         {{"nodeIPOverride", "[\"[fd00:10:96::]:54321\"]"}},
         "nodeIPOverride: "},
    });
}

TEST_CASE("kube-proxy's cases where switchboard's verdict differs (docs/kube-proxy-config.md)") {
    check_cases({
        // Ignored fields are not validated: named in the warning, no effect.
        {"ConfigSyncPeriod must be > 0: loads", kV1, {{"configSyncPeriod", "-1s"}}, ""},
        {"invalid logging format: loads", kV1, {{"logging.format", "\"unsupported format\""}}, ""},
        {"ClientConnection: burst < 0: loads", kV1, {{"clientConnection.burst", "-5"}}, ""},
        // switchboard keeps one node IP.
        {"DualStackIPStrings: dual stack ip pair: refused",
         kV2,
         {{"nodeIPOverride", "[172.16.200.0, \"fde4:8dba:82e1::\"]"}},
         "nodeIPOverride: switchboard takes one node IP (its primary)"},
    });
}

namespace {

// A case of cmd/kube-proxy/app/options_test.go: a command line, with a
// --config file when `config` is not null (after v1alpha1's header).
struct CommandLineCase {
    const char* kube_proxy_case;
    std::vector<std::string> flags;
    const char* config;
    const char* error;  // "": parses; else a part of the one-line error
    void (*check)(const Options&);
};

void check_command_lines(const std::vector<CommandLineCase>& cases) {
    for (const auto& test : cases) {
        INFO(test.kube_proxy_case);
        auto options =
            test.config == nullptr
                ? parse_flags(test.flags, environment_with({}))
                : parse_with_config_text(
                      std::string("apiVersion: kubeproxy.config.k8s.io/v1alpha1\n") + test.config,
                      test.flags);
        if (!std::string(test.error).empty()) {
            REQUIRE_FALSE(options.ok());
            INFO(options.error().message);
            CHECK(options.error().message.find(test.error) != std::string::npos);
            continue;
        }
        INFO((options ? std::string("ok") : options.error().message));
        REQUIRE(options.ok());
        if (test.check != nullptr) test.check(*options);
    }
}

}  // namespace

TEST_CASE("kube-proxy's options_test.go tables, through the command line") {
    check_command_lines({
        // TestLoadConfigFailures.
        {"Decode error test",
         {},
         "Twas bryllyg, and ye slythy toves\n",
         "could not find expected ':'",
         nullptr},
        {"Bad config type test",
         {},
         "kind: KubeSchedulerConfiguration\n",
         "kind: \"KubeSchedulerConfiguration\" is not KubeProxyConfiguration",
         nullptr},
        {"Missing quotes around :: bindAddress",
         {},
         "kind: KubeProxyConfiguration\nbindAddress: ::\n",
         "c.conf:3: ",
         nullptr},
        // TestProcessHostnameOverrideFlag: the file says foo.
        {"Hostname from config file",
         {"--hostname-override="},
         "kind: KubeProxyConfiguration\nhostnameOverride: foo\n",
         "",
         [](const Options& o) { CHECK(o.node_name == "foo"); }},
        {"Hostname from flag",
         {"--hostname-override=  bar "},
         "kind: KubeProxyConfiguration\nhostnameOverride: foo\n",
         "",
         [](const Options& o) { CHECK(o.node_name == "bar"); }},
        {"Hostname is space",
         {"--hostname-override=   "},
         "kind: KubeProxyConfiguration\nhostnameOverride: foo\n",
         "--hostname-override: ",
         nullptr},
        // TestProcessV1Alpha1Flags: the sync periods of the mode in use.
        {"iptables configuration",
         {"--iptables-sync-period=36s", "--iptables-min-sync-period=3s", "--proxy-mode=iptables"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.sync_period == 36s);
             CHECK(o.min_sync_period == 3s);
         }},
        {"iptables + ipvs configuration with iptables mode",
         {"--iptables-sync-period=36s", "--iptables-min-sync-period=3s", "--ipvs-sync-period=16s",
          "--ipvs-min-sync-period=7s", "--proxy-mode=iptables"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.sync_period == 36s);
             CHECK(o.min_sync_period == 3s);
         }},
        // kube-proxy's flag processing keeps the periods; its validation
        // refuses the Windows mode on Linux, and so does switchboard.
        {"winkernel configuration (refused on Linux)",
         {"--iptables-sync-period=36s", "--iptables-min-sync-period=3s",
          "--proxy-mode=kernelspace"},
         nullptr,
         "--proxy-mode: \"kernelspace\"",
         nullptr},
        {"ipvs + iptables configuration with ipvs mode",
         {"--iptables-sync-period=36s", "--iptables-min-sync-period=3s", "--ipvs-sync-period=16s",
          "--ipvs-min-sync-period=7s", "--proxy-mode=ipvs"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.sync_period == 16s);
             CHECK(o.min_sync_period == 7s);
         }},
        {"ipvs configuration",
         {"--ipvs-sync-period=16s", "--ipvs-min-sync-period=7s", "--proxy-mode=ipvs"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.sync_period == 16s);
             CHECK(o.min_sync_period == 7s);
         }},
        {"cluster cidr",
         {"--cluster-cidr=2002:0:0:1234::/64,10.0.0.0/14"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.backend.cluster_cidrs ==
                   std::vector<Prefix>{prefix("2002:0:0:1234::/64"), prefix("10.0.0.0/14")});
         }},
        // TestOptionsComplete: -v over the file's logging, other flags
        // overwritten by the file (--vmodule: ignored here).
        {"flags",
         {"-v=7", "--vmodule", "goo.go=8"},
         nullptr,
         "",
         [](const Options& o) { CHECK(o.verbosity == 7); }},
        {"both",
         {"-v=7", "--vmodule", "goo.go=8", "--ipvs-scheduler", "some-scheduler"},
         "kind: KubeProxyConfiguration\nlogging:\n  format: json\n  verbosity: 10\n",
         "",
         [](const Options& o) {
             CHECK(o.verbosity == 7);
             CHECK(o.backend.ipvs_scheduler == "rr");
         }},
        // TestAddressFromDeprecatedFlags.
        {"IPv4 bind address",
         {"--healthz-bind-address=1.2.3.4", "--healthz-port=12345",
          "--metrics-bind-address=2.3.4.5", "--metrics-port=23456"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.healthz_bind == host_port("1.2.3.4:12345"));
             CHECK(o.metrics_bind == host_port("2.3.4.5:23456"));
         }},
        {"IPv4 bind address has port",
         {"--healthz-bind-address=1.2.3.4:12345", "--healthz-port=23456",
          "--metrics-bind-address=2.3.4.5:12345", "--metrics-port=23456"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.healthz_bind == host_port("1.2.3.4:12345"));
             CHECK(o.metrics_bind == host_port("2.3.4.5:12345"));
         }},
        {"IPv6 bind address",
         {"--healthz-bind-address=fd00:1::5", "--healthz-port=12345",
          "--metrics-bind-address=fd00:1::6", "--metrics-port=23456"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.healthz_bind == host_port("[fd00:1::5]:12345"));
             CHECK(o.metrics_bind == host_port("[fd00:1::6]:23456"));
         }},
        {"IPv6 bind address has port",
         {"--healthz-bind-address=[fd00:1::5]:12345", "--healthz-port=56789",
          "--metrics-bind-address=[fd00:1::6]:56789", "--metrics-port=12345"},
         nullptr,
         "",
         [](const Options& o) {
             CHECK(o.healthz_bind == host_port("[fd00:1::5]:12345"));
             CHECK(o.metrics_bind == host_port("[fd00:1::6]:56789"));
         }},
        // addressFromDeprecatedFlags keeps "[fd00:1::5]", which kube-proxy's
        // validation then refuses: the program's verdict.
        {"Invalid IPv6 Config (refused by validation)",
         {"--healthz-bind-address=[fd00:1::5]", "--healthz-port=12345"},
         nullptr,
         "--healthz-bind-address: \"[fd00:1::5]\" is not IP or IP:PORT",
         nullptr},
    });
}
