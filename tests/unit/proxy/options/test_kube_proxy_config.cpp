// --config: kube-proxy's KubeProxyConfiguration, every field switchboard
// honours, kube-proxy's defaulting, the fields it ignores, its errors, and
// how the file combines with the command line.
#include <catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "proxy/options/flags.h"
#include "proxy/options/kube_proxy_config.h"
#include "tests/unit/proxy/options/config_file.h"
#include "tests/unit/proxy/options/kube_proxy_defaults.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kHeader =
    "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
    "kind: KubeProxyConfiguration\n";

std::string read_data(const std::string& name) {
    std::ifstream file(std::string(SWITCHBOARD_TEST_DATA) + "/" + name);
    REQUIRE(file.good());
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

Result<Options> parse_with_config(const std::string& body, std::vector<std::string> flags = {}) {
    return parse_with_config_text(kHeader + body, std::move(flags));
}

Options config_ok(const std::string& body, std::vector<std::string> flags = {}) {
    return options_ok(parse_with_config(body, std::move(flags)));
}

std::string config_error(const std::string& body) {
    return error_line(parse_with_config(body));
}

}  // namespace

TEST_CASE("kubeadm's config.conf with kubeadm's command line") {
    auto environment =
        environment_with({{"/var/lib/kube-proxy/config.conf", read_data("kubeadm/config.conf")}});
    auto parsed = parse_flags(
        {"--config=/var/lib/kube-proxy/config.conf", "--hostname-override=node-a"}, environment);
    INFO((parsed ? std::string("ok") : parsed.error().message));
    REQUIRE(parsed.ok());
    const Options& options = *parsed;
    CHECK(options.command == Command::kRun);
    CHECK(options.config_file == "/var/lib/kube-proxy/config.conf");
    CHECK(options.node_name == "node-a");
    CHECK(options.kubeconfig == "/var/lib/kube-proxy/kubeconfig.conf");
    CHECK(options.source_file.empty());
    // mode "": iptables for kube-proxy, nftables (the default) here.
    CHECK(options.proxy_mode == ProxyMode::kNftables);
    CHECK(options.backend.cluster_cidrs == std::vector<Prefix>{prefix("10.244.0.0/16")});
    CHECK(options.backend.ipvs_scheduler == "rr");
    // kube-proxy's defaulting of the zero values and nulls kubeadm writes.
    check_kube_proxy_defaults(options);
    // Every field kubeadm writes is known and holds nothing to warn about.
    CHECK(options.warnings.empty());
}

TEST_CASE("every honoured field reaches Options") {
    Options options = config_ok(
        "mode: iptables\n"
        "clientConnection:\n  kubeconfig: /etc/kp.conf\n"
        "hostnameOverride: Worker-9\n"
        "clusterCIDR: 10.244.0.0/16,fd00:10:244::/56\n"
        "bindAddress: 192.168.1.10\n"
        "healthzBindAddress: 0.0.0.0:11256\n"
        "metricsBindAddress: 0.0.0.0\n"
        "bindAddressHardFail: true\n"
        "nodePortAddresses: [192.168.0.0/16, 10.1.2.3/32]\n"
        "detectLocalMode: BridgeInterface\n"
        "detectLocal:\n  bridgeInterface: cbr0\n  interfaceNamePrefix: veth\n"
        "iptables:\n  masqueradeAll: true\n  masqueradeBit: 3\n  syncPeriod: 1m0s\n"
        "  minSyncPeriod: 2s\n  localhostNodePorts: false\n"
        "ipvs:\n  scheduler: sh\n"
        "conntrack:\n  maxPerCore: 0\n  min: 5000\n  tcpEstablishedTimeout: 2h0m0s\n"
        "  tcpCloseWaitTimeout: 30m\n  tcpBeLiberal: true\n  udpTimeout: 30s\n"
        "  udpStreamTimeout: 2m\n"
        "oomScoreAdj: -500\n"
        "logging:\n  verbosity: 4\n");
    check_every_field_example(options);
    CHECK(options.warnings.empty());
}

TEST_CASE("the mode's section is the one read") {
    SECTION("nftables reads nftables.*") {
        Options options = config_ok(
            "mode: nftables\n"
            "nftables:\n  masqueradeAll: true\n  masqueradeBit: 2\n  syncPeriod: 20s\n"
            "  minSyncPeriod: 500ms\n");
        CHECK(options.proxy_mode == ProxyMode::kNftables);
        CHECK(options.backend.masquerade_all);
        CHECK(options.backend.masquerade_mark == 0x4);
        CHECK(options.sync_period == 20s);
        CHECK(options.min_sync_period == 500ms);
    }
    SECTION("mode \"\" reads iptables.*, as kube-proxy does, and runs nftables") {
        Options options = config_ok(
            "mode: \"\"\n"
            "iptables:\n  masqueradeAll: true\n  syncPeriod: 20s\n"
            "nftables:\n  syncPeriod: 0s\n  masqueradeBit: null\n");
        CHECK(options.proxy_mode == ProxyMode::kNftables);
        CHECK(options.backend.masquerade_all);
        CHECK(options.sync_period == 20s);
        CHECK(options.warnings.empty());
    }
    SECTION("ipvs reads ipvs.* and iptables.masqueradeBit; its minSyncPeriod defaults to 0") {
        Options options = config_ok(
            "mode: ipvs\n"
            "ipvs:\n  syncPeriod: 45s\n"
            "iptables:\n  masqueradeBit: 7\n  masqueradeAll: true\n");
        CHECK(options.proxy_mode == ProxyMode::kIpvs);
        CHECK(options.sync_period == 45s);
        CHECK(options.min_sync_period == 0s);
        CHECK(options.backend.masquerade_mark == 0x80);
        CHECK(options.backend.masquerade_all);
    }
    SECTION("a set field of another mode's section is named in one warning") {
        Options options = config_ok(
            "mode: nftables\n"
            "iptables:\n  syncPeriod: 10s\n  masqueradeBit: 3\n");
        CHECK(options.sync_period == 30s);
        REQUIRE(options.warnings.size() == 1);
        CHECK(options.warnings[0] ==
              "c.conf: fields kube-proxy does not read in mode \"nftables\", ignored: "
              "iptables.syncPeriod (line 5), iptables.masqueradeBit (line 6)");
    }
    SECTION("the top-level syncPeriod of newer versions; the mode's section wins") {
        CHECK(config_ok("syncPeriod: 40s\nminSyncPeriod: 3s\n").sync_period == 40s);
        CHECK(config_ok("syncPeriod: 40s\nminSyncPeriod: 3s\n").min_sync_period == 3s);
        CHECK(config_ok("iptables:\n  syncPeriod: 50s\nsyncPeriod: 40s\n").sync_period == 50s);
        CHECK(config_ok("syncPeriod: 40s\niptables:\n  syncPeriod: 50s\n").sync_period == 50s);
    }
}

TEST_CASE("kube-proxy's defaulting of the file") {
    // Zero values of defaulted fields are absent; pointers' zeros are values.
    Options zeros = config_ok(
        "healthzBindAddress: \"\"\nmetricsBindAddress: \"\"\n"
        "iptables:\n  syncPeriod: 0s\n  minSyncPeriod: 0s\n  masqueradeBit: 0\n"
        "conntrack:\n  tcpEstablishedTimeout: 0s\n  min: 0\n"
        "oomScoreAdj: 0\n");
    CHECK(zeros.metrics_bind == host_port("127.0.0.1:10249"));
    CHECK(zeros.healthz_bind == host_port("0.0.0.0:10256"));
    CHECK(zeros.sync_period == 30s);
    CHECK(zeros.min_sync_period == 1s);
    CHECK(zeros.backend.masquerade_mark == 0x1);
    CHECK(zeros.conntrack.tcp_established_timeout == 0s);
    CHECK(zeros.conntrack.min == 0);
    CHECK(zeros.oom_score_adj == 0);
    // An IPv6 bindAddress moves the default servers to IPv6.
    Options v6 = config_ok("bindAddress: \"::\"\n");
    CHECK(v6.metrics_bind == host_port("[::1]:10249"));
    CHECK(v6.healthz_bind == host_port("[::]:10256"));
    // Absent fields: kube-proxy's defaults, as for the flags.
    Options empty = config_ok("");
    CHECK(empty.sync_period == 30s);
    CHECK(empty.conntrack.max_per_core == 32768);
    CHECK(empty.oom_score_adj == -999);
    CHECK(empty.kubeconfig.empty());
}

TEST_CASE("JSON is read too") {
    auto environment =
        environment_with({{"c.json",
                           "{\"apiVersion\": \"kubeproxy.config.k8s.io/v1alpha1\",\n"
                           " \"kind\": \"KubeProxyConfiguration\",\n"
                           " \"mode\": \"iptables\",\n"
                           " \"conntrack\": {\"maxPerCore\": 0, \"tcpBeLiberal\": true},\n"
                           " \"nodePortAddresses\": [\"primary\"]}"}});
    auto options = parse_flags({"--config", "c.json"}, environment);
    REQUIRE(options.ok());
    CHECK(options->proxy_mode == ProxyMode::kIptables);
    CHECK(options->conntrack.max_per_core == 0);
    CHECK(options->conntrack.tcp_be_liberal);
    CHECK(options->nodeport_primary);
}

TEST_CASE("fields without meaning here: one warning naming them") {
    Options options = config_ok(
        "featureGates:\n  NFTablesProxyMode: true\n"
        "clientConnection:\n  qps: 50\n  burst: 10\n  contentType: \"\"\n"
        "ipvs:\n  strictARP: true\n  excludeCIDRs: null\n"
        "winkernel:\n  networkName: \"\"\n"
        "logging:\n  format: json\n  flushFrequency: 0\n");
    REQUIRE(options.warnings.size() == 1);
    CHECK(options.warnings[0] ==
          "c.conf: fields switchboard does not use, ignored: featureGates (line 3), "
          "clientConnection.qps (line 6), logging.format (line 15)");
}

TEST_CASE("unknown fields: one warning naming them, as kube-proxy's lenient decoding") {
    Options options = config_ok("udpIdleTimeout: 250ms\niptables:\n  frobnicate: true\n");
    REQUIRE(options.warnings.size() == 1);
    CHECK(options.warnings[0] ==
          "c.conf: unknown fields, ignored (as kube-proxy's lenient v1alpha1 decoding does): "
          "udpIdleTimeout (line 3), iptables.frobnicate (line 5)");
}

TEST_CASE("bad files and bad values: PATH:LINE: why") {
    CHECK(config_error("iptables:\n  syncPeriod: 3x\n")
              .rfind("c.conf:4: iptables.syncPeriod: \"3x\" is not a duration", 0) == 0);
    CHECK(config_error("mode: userspace\n") ==
          "c.conf:3: mode: \"userspace\" is not one of nftables, iptables, ipvs");
    CHECK(config_error("clusterCIDR: 10.0.0.0/33\n") ==
          "c.conf:3: clusterCIDR: \"10.0.0.0/33\" is not a CIDR");
    CHECK(config_error("iptables:\n  masqueradeBit: 40\n") ==
          "c.conf:4: iptables.masqueradeBit: 40 is out of range 0-31");
    CHECK(config_error("iptables:\n  masqueradeBit: \"14\"\n") ==
          "c.conf:4: iptables.masqueradeBit: \"14\" is not a number");
    CHECK(config_error("bindAddressHardFail: sometimes\n") ==
          "c.conf:3: bindAddressHardFail: \"sometimes\" is not a boolean");
    // Lines without ':' are YAML syntax errors (kube-proxy: "could not find
    // expected ':'"), not keys without values.
    CHECK(config_error("mode nftables\n") ==
          "c.conf:3: could not find expected ':' after \"mode nftables\"");
    CHECK(config_error("conntrack:\n  min: 5\n  maxPerCore 3\n") ==
          "c.conf:5: could not find expected ':' after \"maxPerCore 3\"");
    CHECK(config_error("nodePortAddresses: 10.0.0.0/8\n") ==
          "c.conf:3: nodePortAddresses: is not a list");
    CHECK(config_error("conntrack: 5\n") == "c.conf:3: conntrack: is not an object");
    CHECK(config_error("hostnameOverride: [a, b]\n") ==
          "c.conf:3: hostnameOverride: a list is not a string");
    // kube-proxy (GetHostname): "empty hostname is invalid", not the host's.
    CHECK(config_error("hostnameOverride: \"  \"\n") ==
          "c.conf:3: hostnameOverride: \"  \" is blank: an empty name is invalid");
    CHECK(config_error("healthzBindAddress: \"[::1]\"\n") ==
          "c.conf:3: healthzBindAddress: \"[::1]\" is not IP or IP:PORT (brackets only with a "
          "port)");
    CHECK(config_error("oomScoreAdj: -1001\n") ==
          "c.conf:3: oomScoreAdj: -1001 is out of range -1000-1000");
    CHECK(config_error("bindAddress: 10.0.0.1:80\n") ==
          "c.conf:3: bindAddress: \"10.0.0.1:80\" is not an IP address");
    CHECK(config_error("detectLocalMode: BridgeInterface\n") ==
          "c.conf: detectLocal.bridgeInterface: must be set when the detect-local mode is "
          "BridgeInterface (c.conf:3: detectLocalMode)");
    CHECK(config_error("detectLocalMode: InterfaceNamePrefix\ndetectLocal:\n"
                       "  interfaceNamePrefix: \"a/b\"\n") ==
          "c.conf:5: detectLocal.interfaceNamePrefix: \"a/b\" is not an interface name (no '/', "
          "whitespace or NUL)");
    CHECK(config_error("iptables:\n  syncPeriod: 1s\n  minSyncPeriod: 5s\n") ==
          "c.conf:4: iptables.syncPeriod: 1s is shorter than iptables.minSyncPeriod 5s");
    CHECK(config_error("logging:\n  verbosity: 11\n") ==
          "c.conf:4: logging.verbosity: 11 is out of range 0-10");
}

TEST_CASE("the file's type and syntax") {
    auto error_of = [](const std::string& text) {
        auto config = parse_kube_proxy_config(text, "/etc/kp/config.conf");
        REQUIRE_FALSE(config.ok());
        CHECK(config.error().code == ErrorCode::kInvalidArgument);
        return config.error().message;
    };
    // yaml-cpp's mark: where it gave up.
    CHECK(error_of("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                   "mode: [unclosed\n") == "/etc/kp/config.conf:4: end of sequence flow not found");
    CHECK(error_of("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                   "  mode: x\n") == "/etc/kp/config.conf:3: illegal map value");
    CHECK(error_of("kind: KubeProxyConfiguration\n") ==
          "/etc/kp/config.conf:1: apiVersion is missing (want kubeproxy.config.k8s.io/v1alpha1 "
          "or v1alpha2)");
    CHECK(error_of("apiVersion: kubeproxy.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n") ==
          "/etc/kp/config.conf:1: apiVersion: \"kubeproxy.config.k8s.io/v1beta1\" is not "
          "kubeproxy.config.k8s.io/v1alpha1 or v1alpha2");
    CHECK(error_of("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n") ==
          "/etc/kp/config.conf:2: kind: \"KubeletConfiguration\" is not KubeProxyConfiguration");
    CHECK(error_of("") ==
          "/etc/kp/config.conf:1: not a KubeProxyConfiguration (want a YAML or JSON object)");
    CHECK(error_of("- a\n- b\n") ==
          "/etc/kp/config.conf:1: not a KubeProxyConfiguration (want a YAML or JSON object)");
    // The values of a good file carry their line.
    auto config = parse_kube_proxy_config(std::string(kHeader) + "\n\nclusterCIDR: 10.0.0.0/8\n",
                                          "/etc/kp/config.conf");
    REQUIRE(config.ok());
    REQUIRE(config->values.size() == 1);
    CHECK(config->values[0].text == "10.0.0.0/8");
    CHECK(config->values[0].origin.prefix == "/etc/kp/config.conf:5: clusterCIDR");
    CHECK(config->values[0].origin.name == "clusterCIDR");
}

TEST_CASE("a repeated key: the last one wins, as in kube-proxy's lenient decoding") {
    CHECK(config_ok("mode: ipvs\nmode: iptables\n").proxy_mode == ProxyMode::kIptables);
}

TEST_CASE("flags and --config combine as kube-proxy combines them") {
    SECTION("kube-proxy flags are ignored, one warning each") {
        Options options =
            config_ok("mode: iptables\n", {"--proxy-mode=ipvs", "--iptables-sync-period=5s",
                                           "--cluster-cidr=10.0.0.0/8", "--kubeconfig=/x"});
        CHECK(options.proxy_mode == ProxyMode::kIptables);
        CHECK(options.sync_period == 30s);
        CHECK(options.backend.cluster_cidrs.empty());
        CHECK(options.kubeconfig.empty());
        REQUIRE(options.warnings.size() == 4);
        for (const char* flag :
             {"--proxy-mode", "--iptables-sync-period", "--cluster-cidr", "--kubeconfig"}) {
            bool found = false;
            for (const auto& warning : options.warnings) {
                found = found || warning.rfind(std::string(flag) +
                                                   ": ignored: --config c.conf "
                                                   "sets kube-proxy's options",
                                               0) == 0;
            }
            CHECK(found);
        }
    }
    SECTION("--hostname-override and -v win over the file") {
        Options options = config_ok("hostnameOverride: from-file\nlogging:\n  verbosity: 1\n",
                                    {"--hostname-override=From-Flag", "-v=3"});
        CHECK(options.node_name == "from-flag");
        CHECK(options.verbosity == 3);
        CHECK(options.warnings.empty());
        Options file_only = config_ok("hostnameOverride: from-file\nlogging:\n  verbosity: 1\n");
        CHECK(file_only.node_name == "from-file");
        CHECK(file_only.verbosity == 1);
        // An empty --hostname-override keeps the file's (kube-proxy); one of
        // blanks is refused.
        CHECK(config_ok("hostnameOverride: from-file\n", {"--hostname-override="}).node_name ==
              "from-file");
        auto blank = parse_with_config("hostnameOverride: from-file\n", {"--hostname-override= "});
        REQUIRE_FALSE(blank.ok());
        CHECK(blank.error().message ==
              "--hostname-override: \" \" is blank: an empty name is invalid");
        // Neither: NODE_NAME, then the host name.
        CHECK(config_ok("").node_name == "host-a");
    }
    SECTION("switchboard's own flags and --master apply as usual") {
        Options options = config_ok("", {"--dns-listen=127.0.0.1", "--source=file:/s.json",
                                         "--master=https://10.0.0.1:6443", "--init-only",
                                         "--cleanup-kube-proxy", "--cluster-domain=corp.example"});
        CHECK(options.dns.listen == std::vector<HostPort>{host_port("127.0.0.1:53")});
        CHECK(options.source_file == "/s.json");
        CHECK(options.master == "https://10.0.0.1:6443");
        CHECK(options.init_only);
        CHECK(options.cleanup_kube_proxy);
        CHECK(options.dns.cluster_domain == "corp.example");
        CHECK(options.warnings.empty());
    }
    SECTION("an unreadable file exits 2 naming it") {
        auto options = parse_flags({"--config=/nope.conf"}, environment_with({}));
        REQUIRE_FALSE(options.ok());
        CHECK(options.error().code == ErrorCode::kInvalidArgument);
        CHECK(options.error().message == "--config: /nope.conf: missing");
    }
    SECTION("an unknown flag still exits 2 with --config") {
        auto options = parse_with_config("", {"--frobnicate"});
        REQUIRE_FALSE(options.ok());
        CHECK(options.error().message == "--frobnicate: unknown flag (see --help)");
    }
}

// Fuzz findings (tests/fuzz/kube_proxy_config_fuzz.cpp).

TEST_CASE("every key of a map is read with its own value and line") {
    // Each key and value was read through a reference to yaml-cpp's
    // temporary iterator proxy: AddressSanitizer's stack-use-after-scope on
    // any file with a map (GCC's -Wdangling-pointer saw it too).
    Options options = config_ok(
        "mode: ipvs\nipvs:\n  scheduler: lc\n  syncPeriod: 45s\n  minSyncPeriod: 2s\n"
        "clusterCIDR: 10.244.0.0/16\nhostnameOverride: node-b\n");
    CHECK(options.proxy_mode == ProxyMode::kIpvs);
    CHECK(options.backend.ipvs_scheduler == "lc");
    CHECK(options.sync_period == 45s);
    CHECK(options.min_sync_period == 2s);
    CHECK(options.node_name == "node-b");
    CHECK(config_error("mode: ipvs\nipvs:\n  scheduler: lc\n  syncPeriod: 45x\n")
              .rfind("c.conf:6: ipvs.syncPeriod: \"45x\" is not a duration", 0) == 0);
}

TEST_CASE("aliases: a map inside itself, or repeated 2^N times, is read in bounded time") {
    SECTION("a map that contains itself (was: unbounded recursion, stack overflow)") {
        Options options = config_ok("featureGates: &gates {A: false, B: *gates}\n");
        REQUIRE(options.warnings.size() == 1);
        CHECK(options.warnings[0] ==
              "c.conf: fields switchboard does not use, ignored: featureGates (line 3)");
    }
    SECTION("2^40 zero values from 40 lines (was: a walk of every one)") {
        std::string body = "x0: &x0 {a: 0, b: false}\n";
        for (int i = 1; i < 40; ++i) {
            std::string previous = "x" + std::to_string(i - 1);
            body += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " {a: *" + previous +
                    ", b: *" + previous + "}\n";
        }
        body += "featureGates: *x39\n";
        Options options = config_ok(body);
        REQUIRE(options.warnings.size() == 2);
        CHECK(options.warnings[0] ==
              "c.conf: fields switchboard does not use, ignored: featureGates (line 43)");
    }
}

TEST_CASE("control characters never take a message or a warning onto another line") {
    // yaml-cpp quotes the character it refuses, here a newline.
    auto config = parse_kube_proxy_config(std::string("a\x04\0\n", 4), "c.conf");
    REQUIRE_FALSE(config.ok());
    CHECK(config.error().message == "c.conf:2: unknown escape character: ?");
    CHECK(config_error("clusterCIDR: \"10.0.0.0/8\\nx\"\n") ==
          "c.conf:3: clusterCIDR: \"10.0.0.0/8?x\" is not a CIDR");
    Options options = config_ok("\"new\\nfield\\e[31m\": 1\n");
    REQUIRE(options.warnings.size() == 1);
    CHECK(options.warnings[0] ==
          "c.conf: unknown fields, ignored (as kube-proxy's lenient v1alpha1 decoding does): "
          "new?field?[31m (line 3)");
}

TEST_CASE("a header line without ':' is a syntax error, not a missing kind") {
    auto parsed = parse_flags(
        {"--config=c.conf"},
        environment_with(
            {{"c.conf",
              "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind KubeProxyConfiguration\n"}}));
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message ==
          "c.conf:2: could not find expected ':' after \"kind KubeProxyConfiguration\"");
}
