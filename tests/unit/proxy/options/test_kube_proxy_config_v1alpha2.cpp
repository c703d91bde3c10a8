// --config with apiVersion kubeproxy.config.k8s.io/v1alpha2: its layout
// (linux.*, top-level sync periods, bind address lists and ports,
// nodeIPOverride, detectLocal.clusterCIDRs), its defaulting
// (pkg/proxy/apis/config/v1alpha2/defaults.go) and its strict decoding.
#include <catch.hpp>

#include "proxy/options/flags.h"
#include "tests/unit/proxy/options/config_file.h"
#include "tests/unit/proxy/options/kube_proxy_defaults.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kHeader =
    "apiVersion: kubeproxy.config.k8s.io/v1alpha2\n"
    "kind: KubeProxyConfiguration\n";

// kube-proxy's own defaulted v1alpha2 object (pkg/proxy/apis/config/scheme/
// testdata/KubeProxyConfiguration/roundtrip/default/v1alpha2.yaml), as
// transcribed here.
constexpr const char* kKubeProxyDefaults =
    "bindAddressHardFail: false\n"
    "clientConnection:\n"
    "  acceptContentTypes: \"\"\n"
    "  burst: 10\n"
    "  contentType: application/vnd.kubernetes.protobuf\n"
    "  kubeconfig: \"\"\n"
    "  qps: 5\n"
    "configHardFail: true\n"
    "configSyncPeriod: 15m0s\n"
    "detectLocal: {}\n"
    "detectLocalMode: ClusterCIDR\n"
    "enableProfiling: false\n"
    "featureGates:\n"
    "  MultiCIDRServiceAllocator: false\n"
    "healthzBindAddresses:\n- 0.0.0.0/0\n- ::/0\n"
    "healthzBindPort: 10256\n"
    "iptables:\n  localhostNodePorts: false\n  masqueradeBit: 14\n"
    "ipvs:\n  masqueradeBit: 14\n  strictARP: false\n  tcpFinTimeout: 0s\n  tcpTimeout: 0s\n"
    "  udpTimeout: 0s\n"
    "linux:\n"
    "  conntrack:\n"
    "    maxPerCore: 32768\n    min: 131072\n    tcpBeLiberal: false\n"
    "    tcpCloseWaitTimeout: 1h0m0s\n    tcpEstablishedTimeout: 24h0m0s\n"
    "    udpStreamTimeout: 0s\n    udpTimeout: 0s\n"
    "  masqueradeAll: false\n"
    "  oomScoreAdj: -999\n"
    "logging:\n"
    "  flushFrequency: 5s\n  format: text\n"
    "  options:\n    json:\n      infoBufferSize: \"0\"\n    text:\n      infoBufferSize: \"0\"\n"
    "  verbosity: 0\n"
    "metricsBindAddresses:\n- 127.0.0.0/8\n- ::1/128\n"
    "metricsBindPort: 10249\n"
    "minSyncPeriod: 1s\n"
    "nftables:\n  masqueradeBit: 14\n"
    "syncPeriod: 30s\n"
    "windows:\n  runAsService: false\n"
    "winkernel:\n  enableDSR: false\n  forwardHealthCheckVip: false\n";

Options v1alpha2_ok(const std::string& body) {
    return options_ok(parse_with_config_text(kHeader + body));
}

std::string v1alpha2_error(const std::string& body) {
    return error_line(parse_with_config_text(kHeader + body));
}

}  // namespace

TEST_CASE("v1alpha2: kube-proxy's defaulted object gives its defaults, without a warning") {
    for (const char* body : {"", kKubeProxyDefaults}) {
        INFO(body);
        Options options = v1alpha2_ok(body);
        CHECK(options.proxy_mode == ProxyMode::kNftables);  // mode "": switchboard's default
        check_kube_proxy_defaults(options, /*localhost_node_ports=*/false);
        CHECK(options.warnings.empty());
    }
}

TEST_CASE("v1alpha2: every honoured field reaches Options") {
    // v1alpha1's example (test_kube_proxy_config.cpp) in v1alpha2's layout.
    Options options = v1alpha2_ok(
        "mode: iptables\n"
        "clientConnection:\n  kubeconfig: /etc/kp.conf\n"
        "hostnameOverride: Worker-9\n"
        "nodeIPOverride: [192.168.1.10]\n"
        "healthzBindAddresses: [0.0.0.0/0]\n"
        "healthzBindPort: 11256\n"
        "metricsBindAddresses: [0.0.0.0/0]\n"
        "bindAddressHardFail: true\n"
        "nodePortAddresses: [192.168.0.0/16, 10.1.2.3/32]\n"
        "detectLocalMode: BridgeInterface\n"
        "detectLocal:\n  bridgeInterface: cbr0\n  interfaceNamePrefix: veth\n"
        "  clusterCIDRs: [10.244.0.0/16, fd00:10:244::/56]\n"
        "iptables:\n  masqueradeBit: 3\n"
        "syncPeriod: 1m0s\n"
        "minSyncPeriod: 2s\n"
        "ipvs:\n  scheduler: sh\n"
        "linux:\n"
        "  masqueradeAll: true\n"
        "  oomScoreAdj: -500\n"
        "  conntrack:\n    maxPerCore: 0\n    min: 5000\n    tcpEstablishedTimeout: 2h0m0s\n"
        "    tcpCloseWaitTimeout: 30m\n    tcpBeLiberal: true\n    udpTimeout: 30s\n"
        "    udpStreamTimeout: 2m\n"
        "logging:\n  verbosity: 4\n");
    check_every_field_example(options);
    CHECK(options.warnings.empty());
}

TEST_CASE("v1alpha2: the mode's masquerade bit, one pair of sync periods for every mode") {
    const std::string bits =
        "iptables:\n  masqueradeBit: 1\nnftables:\n  masqueradeBit: 2\nipvs:\n  masqueradeBit: 3\n"
        "  scheduler: lc\n";
    CHECK(v1alpha2_ok("mode: iptables\n" + bits).backend.masquerade_mark == 0x2);
    CHECK(v1alpha2_ok("mode: nftables\n" + bits).backend.masquerade_mark == 0x4);
    Options ipvs = v1alpha2_ok("mode: ipvs\n" + bits + "syncPeriod: 20s\nminSyncPeriod: 0s\n");
    CHECK(ipvs.backend.masquerade_mark == 0x8);
    CHECK(ipvs.backend.ipvs_scheduler == "lc");
    CHECK(ipvs.sync_period == 20s);
    // v1alpha2 defaults a zero minSyncPeriod to 1s in every mode (v1alpha1's
    // ipvs.minSyncPeriod stays 0s).
    CHECK(ipvs.min_sync_period == 1s);
    // The other modes' bits are named in the warning, as in v1alpha1.
    REQUIRE(ipvs.warnings.size() == 1);
    CHECK(ipvs.warnings[0] ==
          "c.conf: fields kube-proxy does not read in mode \"ipvs\", ignored: "
          "iptables.masqueradeBit (line 5), nftables.masqueradeBit (line 7)");
    // An explicit nftables mode answers NodePorts on the primary IPs.
    CHECK(v1alpha2_ok("mode: nftables\n").nodeport_primary);
}

TEST_CASE("v1alpha2: the bind address lists and ports") {
    struct Case {
        const char* body;
        const char* healthz;
        const char* metrics;
    };
    const std::vector<Case> cases = {
        {"", "0.0.0.0:10256", "127.0.0.1:10249"},
        {"nodeIPOverride: [fd00::10]\n", "[::]:10256", "[::1]:10249"},
        {"healthzBindAddresses: [::/0]\nmetricsBindAddresses: [::1/128]\n", "[::]:10256",
         "[::1]:10249"},
        {"healthzBindAddresses: [10.0.0.5/32]\nhealthzBindPort: 0\n", "10.0.0.5:10256",
         "127.0.0.1:10249"},
        {"metricsBindAddresses: [127.0.0.0/8]\nmetricsBindPort: 19249\n", "0.0.0.0:10256",
         "127.0.0.1:19249"},
        {"healthzBindAddresses: [fd00::5/128]\n", "[fd00::5]:10256", "127.0.0.1:10249"},
        {"healthzBindAddresses: []\nmetricsBindAddresses: null\n", "0.0.0.0:10256",
         "127.0.0.1:10249"},
    };
    for (const auto& test : cases) {
        INFO(test.body);
        Options options = v1alpha2_ok(test.body);
        CHECK(options.healthz_bind == host_port(test.healthz));
        CHECK(options.metrics_bind == host_port(test.metrics));
    }
}

TEST_CASE("v1alpha2: refused, with the field's line") {
    // v1alpha1's spellings are unknown to v1alpha2, and its decoding is strict.
    CHECK(v1alpha2_error("clusterCIDR: 10.0.0.0/8\n") ==
          "c.conf:3: clusterCIDR: unknown field (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("iptables:\n  syncPeriod: 10s\n") ==
          "c.conf:4: iptables.syncPeriod: unknown field (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("conntrack:\n  min: 1\n") ==
          "c.conf:3: conntrack: unknown field (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("bindAddress: 10.0.0.1\n") ==
          "c.conf:3: bindAddress: unknown field (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("healthzBindAddress: 0.0.0.0:10256\n") ==
          "c.conf:3: healthzBindAddress: unknown field (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("mode: ipvs\nmode: iptables\n") ==
          "c.conf:4: mode: repeated (kube-proxy decodes v1alpha2 strictly)");
    CHECK(v1alpha2_error("nodeIPOverride: [10.0.0.1, fd00::1]\n") ==
          "c.conf:3: nodeIPOverride: switchboard takes one node IP (its primary)");
    CHECK(v1alpha2_error("nodeIPOverride: [node-a]\n") ==
          "c.conf:3: nodeIPOverride: \"node-a\" is not an IP address");
    CHECK(v1alpha2_error("healthzBindAddresses: [10.0.0.0/8]\n") ==
          "c.conf:3: healthzBindAddresses: \"10.0.0.0/8\": switchboard listens on one address: "
          "give one /32 or /128, 0.0.0.0/0 and/or ::/0, or 127.0.0.0/8 and/or ::1/128");
    CHECK(v1alpha2_error("metricsBindAddresses: [10.0.0.1]\n") ==
          "c.conf:3: metricsBindAddresses: \"10.0.0.1\" is not a CIDR");
    CHECK(v1alpha2_error("metricsBindPort: \"9100\"\n") ==
          "c.conf:3: metricsBindPort: \"9100\" is not a number");
    CHECK(v1alpha2_error("healthzBindPort: 70000\n").starts_with("c.conf:3: healthzBindPort: "));
    CHECK(v1alpha2_error("linux:\n  oomScoreAdj: 1001\n") ==
          "c.conf:4: linux.oomScoreAdj: 1001 is out of range -1000-1000");
    CHECK(v1alpha2_error("syncPeriod: 1s\nminSyncPeriod: 5s\n") ==
          "c.conf:3: syncPeriod: 1s is shorter than minSyncPeriod 5s");
}

TEST_CASE("v1alpha2: ignored fields that hold something are named, as in v1alpha1") {
    // configHardFail: false is what switchboard does anyway (it never exits
    // on the node IP checks kube-proxy softens with it): nothing to name.
    Options options = v1alpha2_ok(
        "configHardFail: false\nwindows:\n  runAsService: true\nclientConnection:\n  qps: 50\n");
    REQUIRE(options.warnings.size() == 1);
    CHECK(options.warnings[0] ==
          "c.conf: fields switchboard does not use, ignored: windows.runAsService (line 5), "
          "clientConnection.qps (line 7)");
}

TEST_CASE("v1alpha2: iptables.localhostNodePorts is false when absent and honoured when set") {
    CHECK_FALSE(v1alpha2_ok("mode: iptables\n").backend.localhost_node_ports);
    CHECK_FALSE(v1alpha2_ok("mode: iptables\niptables:\n  localhostNodePorts: null\n")
                    .backend.localhost_node_ports);
    CHECK(v1alpha2_ok("mode: iptables\niptables:\n  localhostNodePorts: true\n")
              .backend.localhost_node_ports);
}
