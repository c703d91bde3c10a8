// Flags: every flag in both forms, defaults, and every rejection's message.
#include <catch.hpp>

#include "base/go_duration.h"
#include "proxy/options/flags.h"
#include "tests/unit/proxy/options/kube_proxy_defaults.h"

using namespace sb;
using namespace sb::proxy;
using namespace std::chrono_literals;

namespace {

const Environment kEnvironment{"", "Node-A.example"};

Options parse_ok(std::vector<std::string> args, const Environment& environment = kEnvironment) {
    auto options = parse_flags(args, environment);
    INFO((options ? std::string("ok") : options.error().message));
    REQUIRE(options.ok());
    return *options;
}

std::string parse_error(std::vector<std::string> args) {
    auto options = parse_flags(args, kEnvironment);
    REQUIRE_FALSE(options.ok());
    CHECK(options.error().code == ErrorCode::kInvalidArgument);
    CHECK(options.error().message.find('\n') == std::string::npos);
    return options.error().message;
}

// `--flag=value` and `--flag value` give the same Options.
template <typename Check>
void both_forms(const std::string& flag, const std::string& value, Check check) {
    SECTION(flag + "=" + value) {
        check(parse_ok({flag + "=" + value}));
    }
    SECTION(flag + " " + value) {
        check(parse_ok({flag, value}));
    }
}

Prefix prefix(const char* text) {
    return *Prefix::parse(text);
}
HostPort host_port(const char* text) {
    return *parse_host_port(text);
}

}  // namespace

TEST_CASE("defaults match kube-proxy's and the design") {
    Options options = parse_ok({});
    CHECK(options.command == Command::kRun);
    CHECK(options.proxy_mode == ProxyMode::kNftables);
    CHECK(options.source_file.empty());
    CHECK(options.node_name == "node-a.example");  // the host name, lowercased
    CHECK(options.backend.cluster_cidrs.empty());
    CHECK_FALSE(options.backend.masquerade_all);
    CHECK(options.backend.nodeport_addresses.empty());
    CHECK_FALSE(options.nodeport_primary);
    CHECK(options.backend.ipvs_scheduler == "rr");
    CHECK(options.backend.masquerade_mark == 0x4000);  // bit 14
    CHECK(options.min_sync_period == 1s);
    CHECK(options.sync_period == 30s);
    CHECK(options.metrics_bind == host_port("127.0.0.1:10249"));
    CHECK(options.healthz_bind == host_port("0.0.0.0:10256"));
    CHECK(options.dns.cluster_domain == "cluster.local");
    CHECK(options.dns.listen.empty());
    CHECK(options.dns.ttl == 30);
    CHECK(options.dns.pods == dns::PodRecords::kInsecure);
    CHECK(options.dns.upstreams.empty());
    CHECK(options.dns.rrl.rate == 0);  // response-rate limiting off
    CHECK(options.dns.rrl.slip == 1);
    CHECK(options.dns.rrl.table_size == 393241);
    CHECK_FALSE(options.dry_run);
    CHECK_FALSE(options.cleanup);
    CHECK(options.verbosity == 0);
}

TEST_CASE("every flag takes --flag=value and --flag value") {
    both_forms("--proxy-mode", "iptables",
               [](const Options& o) { CHECK(o.proxy_mode == ProxyMode::kIptables); });
    both_forms("--proxy-mode", "ipvs",
               [](const Options& o) { CHECK(o.proxy_mode == ProxyMode::kIpvs); });
    both_forms("--source", "file:/tmp/x.json",
               [](const Options& o) { CHECK(o.source_file == "/tmp/x.json"); });
    both_forms("--kubeconfig", "/etc/kube.conf",
               [](const Options& o) { CHECK(o.kubeconfig == "/etc/kube.conf"); });
    both_forms("--master", "https://10.0.0.1:6443",
               [](const Options& o) { CHECK(o.master == "https://10.0.0.1:6443"); });
    both_forms("--hostname-override", " Worker-7 ",
               [](const Options& o) { CHECK(o.node_name == "worker-7"); });
    both_forms("--cluster-cidr", "10.244.0.0/16,fd00:10:244::/56", [](const Options& o) {
        CHECK(o.backend.cluster_cidrs ==
              std::vector<Prefix>{prefix("10.244.0.0/16"), prefix("fd00:10:244::/56")});
    });
    both_forms("--nodeport-addresses", "192.168.0.0/16, 10.1.2.3/32", [](const Options& o) {
        CHECK(o.backend.nodeport_addresses ==
              std::vector<Prefix>{prefix("192.168.0.0/16"), prefix("10.1.2.3/32")});
    });
    both_forms("--nodeport-addresses", "primary",
               [](const Options& o) { CHECK(o.nodeport_primary); });
    both_forms("--ipvs-scheduler", "sed",
               [](const Options& o) { CHECK(o.backend.ipvs_scheduler == "sed"); });
    both_forms("--min-sync-period", "250ms",
               [](const Options& o) { CHECK(o.min_sync_period == 250ms); });
    both_forms("--sync-period", "1m30s", [](const Options& o) { CHECK(o.sync_period == 90s); });
    both_forms("--metrics-bind-address", "0.0.0.0:9999",
               [](const Options& o) { CHECK(o.metrics_bind == host_port("0.0.0.0:9999")); });
    both_forms("--healthz-bind-address", "[::1]:8080",
               [](const Options& o) { CHECK(o.healthz_bind == host_port("[::1]:8080")); });
    both_forms("--cluster-domain", "Corp.Example.",
               [](const Options& o) { CHECK(o.dns.cluster_domain == "corp.example"); });
    both_forms("--dns-listen", "169.254.20.10:53,[fd00::a]:5353", [](const Options& o) {
        CHECK(o.dns.listen ==
              std::vector<HostPort>{host_port("169.254.20.10:53"), host_port("[fd00::a]:5353")});
    });
    both_forms("--dns-ttl", "5", [](const Options& o) { CHECK(o.dns.ttl == 5); });
    both_forms("--dns-pods", "verified",
               [](const Options& o) { CHECK(o.dns.pods == dns::PodRecords::kVerified); });
    both_forms("--dns-pods", "disabled",
               [](const Options& o) { CHECK(o.dns.pods == dns::PodRecords::kDisabled); });
    both_forms("--dns-upstream", "8.8.8.8,1.1.1.1:5353", [](const Options& o) {
        CHECK(o.dns.upstreams ==
              std::vector<HostPort>{host_port("8.8.8.8:53"), host_port("1.1.1.1:5353")});
    });
    both_forms("--dns-rrl", "50", [](const Options& o) { CHECK(o.dns.rrl.rate == 50); });
    both_forms("--dns-rrl-slip", "0", [](const Options& o) { CHECK(o.dns.rrl.slip == 0); });
    both_forms("--dns-rrl-whitelist", "10.0.0.0/8,fd00::/56", [](const Options& o) {
        CHECK(o.dns.rrl.whitelist ==
              std::vector<Prefix>{prefix("10.0.0.0/8"), prefix("fd00::/56")});
    });
    both_forms("--dns-rrl-table-size", "1021",
               [](const Options& o) { CHECK(o.dns.rrl.table_size == 1021); });
    both_forms("--masquerade-bit", "3",
               [](const Options& o) { CHECK(o.backend.masquerade_mark == 0x8); });
    both_forms("--v", "4", [](const Options& o) { CHECK(o.verbosity == 4); });
    both_forms("-v", "2", [](const Options& o) { CHECK(o.verbosity == 2); });
}

TEST_CASE("boolean flags stand alone or take =true/=false, as pflag's do") {
    CHECK(parse_ok({"--masquerade-all"}).backend.masquerade_all);
    CHECK(parse_ok({}).backend.localhost_node_ports);  // kube-proxy's default
    CHECK_FALSE(parse_ok({"--iptables-localhost-nodeports=false"}).backend.localhost_node_ports);
    CHECK(parse_ok({"--iptables-localhost-nodeports"}).backend.localhost_node_ports);
    CHECK(parse_error({"--iptables-localhost-nodeports=maybe"})
              .rfind("--iptables-localhost-nodeports: ", 0) == 0);
    CHECK(parse_ok({"--masquerade-all=true"}).backend.masquerade_all);
    CHECK_FALSE(parse_ok({"--masquerade-all=false"}).backend.masquerade_all);
    CHECK(parse_ok({"--dry-run"}).dry_run);
    // "--masquerade-all true": the value is a stray argument (pflag agrees).
    CHECK(parse_error({"--masquerade-all", "true"}).find("true") != std::string::npos);
    CHECK(parse_ok({"--cleanup"}).cleanup);
    // --dns-autopath: the server-side search path, off unless asked for.
    CHECK_FALSE(parse_ok({}).dns.autopath);
    CHECK(parse_ok({"--dns-autopath"}).dns.autopath);
    CHECK_FALSE(parse_ok({"--dns-autopath=false"}).dns.autopath);
    CHECK(parse_error({"--dns-autopath=maybe"}) ==
          "--dns-autopath: \"maybe\" is not a boolean (true or false)");
}

TEST_CASE("bare addresses get the default ports; empty turns a server off") {
    CHECK(parse_ok({"--metrics-bind-address=0.0.0.0"}).metrics_bind == host_port("0.0.0.0:10249"));
    CHECK(parse_ok({"--healthz-bind-address", "::"}).healthz_bind == host_port("[::]:10256"));
    CHECK_FALSE(parse_ok({"--metrics-bind-address="}).metrics_bind.has_value());
    CHECK_FALSE(parse_ok({"--healthz-bind-address", ""}).healthz_bind.has_value());
    CHECK(parse_ok({"--dns-listen=127.0.0.1"}).dns.listen ==
          std::vector<HostPort>{host_port("127.0.0.1:53")});
}

TEST_CASE("the node name: override, then NODE_NAME, then the host name, lowercased") {
    Environment environment{"From-Env", "host"};
    CHECK(parse_ok({}, environment).node_name == "from-env");
    CHECK(parse_ok({"--hostname-override=Explicit"}, environment).node_name == "explicit");
    CHECK(parse_ok({}, Environment{"", "HOST"}).node_name == "host");
    auto options = parse_flags({}, Environment{"", ""});
    REQUIRE_FALSE(options.ok());
    CHECK(options.error().message.rfind("--hostname-override: ", 0) == 0);
    // kube-proxy: "empty hostname-override is invalid"; an empty one is unset.
    CHECK(parse_error({"--hostname-override=  "}) ==
          "--hostname-override: \"  \" is blank: an empty name is invalid");
    CHECK(parse_ok({"--hostname-override="}, environment).node_name == "from-env");
}

TEST_CASE("the plan command and --help") {
    Options options = parse_ok({"plan", "--source", "file:x.json", "--hostname-override", "n1"});
    CHECK(options.command == Command::kPlan);
    CHECK(options.source_file == "x.json");
    CHECK(options.node_name == "n1");
    CHECK(parse_ok({"--help"}).command == Command::kHelp);
    CHECK(parse_ok({"-h"}).command == Command::kHelp);
    CHECK(usage().find("--proxy-mode") != std::string::npos);
    CHECK(usage().find("--dns-listen") != std::string::npos);
}

TEST_CASE("a repeated flag keeps its last value, as pflag does") {
    CHECK(parse_ok({"--proxy-mode=ipvs", "--proxy-mode=iptables"}).proxy_mode ==
          ProxyMode::kIptables);
}

TEST_CASE("every rejection names its flag on one line") {
    CHECK(parse_error({"--proxy-mode=foo"}) ==
          "--proxy-mode: \"foo\" is not one of nftables, iptables, ipvs");
    CHECK(parse_error({"--source=etcd"}) ==
          "--source: \"etcd\" is not one of kubernetes, file:PATH");
    CHECK(parse_error({"--source", "file:"}) == "--source: file: needs a PATH");
    CHECK(parse_error({"--cluster-cidr=10.0.0.0/33"}) ==
          "--cluster-cidr: \"10.0.0.0/33\" is not a CIDR");
    CHECK(parse_error({"--cluster-cidr=10.0.0.0/8,10.1.0.0/16"}).rfind("--cluster-cidr: ", 0) == 0);
    CHECK(parse_error({"--nodeport-addresses=eth0"}) ==
          "--nodeport-addresses: \"eth0\" is not a CIDR");
    CHECK(parse_error({"--ipvs-scheduler=wrr"}) ==
          "--ipvs-scheduler: \"wrr\" is not one of rr, lc, dh, sh, sed, nq");
    CHECK(parse_error({"--min-sync-period=1"})
              .rfind("--min-sync-period: \"1\" is not a duration", 0) == 0);
    CHECK(parse_error({"--min-sync-period=-1s"}) == "--min-sync-period: \"-1s\" is negative");
    CHECK(parse_error({"--sync-period=soon"}).rfind("--sync-period: ", 0) == 0);
    CHECK(parse_error({"--sync-period=0s"}) == "--sync-period: must be greater than 0");
    CHECK(parse_error({"--sync-period=1s", "--min-sync-period=2s"}) ==
          "--sync-period: 1s is shorter than --min-sync-period 2s");
    CHECK(
        parse_error({"--metrics-bind-address=localhost:1"}).rfind("--metrics-bind-address: ", 0) ==
        0);
    CHECK(parse_error({"--healthz-bind-address=1.2.3.4:99999"})
              .rfind("--healthz-bind-address: ", 0) == 0);
    // kube-proxy's IP-or-IP:PORT flags refuse a bracketed address without a
    // port, with or without the deprecated port flag.
    CHECK(parse_error({"--healthz-bind-address=[::1]", "--healthz-port=10257"}) ==
          "--healthz-bind-address: \"[::1]\" is not IP or IP:PORT (brackets only with a port)");
    CHECK(parse_error({"--metrics-bind-address=[::]"}).rfind("--metrics-bind-address: ", 0) == 0);
    CHECK(parse_error({"--cluster-domain=bad_domain"}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--cluster-domain=-a.b"}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--cluster-domain="}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--dns-listen=1.2.3.4:0"}).rfind("--dns-listen: ", 0) == 0);
    CHECK(parse_error({"--dns-ttl=3601"}) == "--dns-ttl: 3601 is out of range 0-3600");
    CHECK(parse_error({"--dns-ttl=ten"}) == "--dns-ttl: \"ten\" is not an integer");
    CHECK(parse_error({"--dns-pods=all"}) ==
          "--dns-pods: \"all\" is not one of disabled, insecure, verified");
    CHECK(parse_error({"--dns-upstream=not-an-ip"}).rfind("--dns-upstream: ", 0) == 0);
    // The flag is named once, not once by the table and again by the parser.
    CHECK(parse_error({"--dns-upstream=10.0.0.1,"}) ==
          "--dns-upstream: empty entry in \"10.0.0.1,\"");
    CHECK(parse_error({"--dns-upstream=not-an-ip"}).find("--dns-upstream:", 1) ==
          std::string::npos);
    CHECK(parse_error({"--dns-rrl=-1"}) == "--dns-rrl: -1 is out of range 0-1000000");
    CHECK(parse_error({"--dns-rrl-slip=101"}) == "--dns-rrl-slip: 101 is out of range 0-100");
    CHECK(parse_error({"--dns-rrl-whitelist=10.0.0.1"}) ==
          "--dns-rrl-whitelist: \"10.0.0.1\" is not a CIDR");
    CHECK(parse_error({"--dns-rrl-table-size=0"}) ==
          "--dns-rrl-table-size: 0 is out of range 1-67108864");
    CHECK(parse_error({"--masquerade-bit=32"}) == "--masquerade-bit: 32 is out of range 0-31");
    CHECK(parse_error({"--v=-1"}) == "--v: -1 is out of range 0-10");
    CHECK(parse_error({"--dry-run", "--cleanup"}) ==
          "--cleanup: cannot be combined with --dry-run");
    CHECK(parse_error({"plan", "--dry-run"}) ==
          "--dry-run: cannot be combined with the plan command");
}

TEST_CASE("unknown flags and missing values are rejected on one line") {
    CHECK(parse_error({"--no-such-flag"}).find("--no-such-flag") != std::string::npos);
    CHECK(parse_error({"--proxy-mode"}).find("--proxy-mode") != std::string::npos);
    CHECK(parse_error({"stray"}).find("stray") != std::string::npos);
}

TEST_CASE("control characters of an argument never reach a message (fuzz finding)") {
    // A carriage return or a terminal escape would rewrite the line printed.
    CHECK(parse_error({"--proxy-mode=ipvs\r\x1b[2K"}) ==
          "--proxy-mode: \"ipvs??[2K\" is not one of nftables, iptables, ipvs");
    CHECK(parse_error({"stray\x1b]0;title\x07"}) ==
          "\"stray?]0;title?\": unexpected argument (only flags follow the command word)");
}

TEST_CASE("Go durations") {
    auto ok = [](const char* text) {
        auto duration = parse_go_duration(text);
        INFO(text);
        REQUIRE(duration.ok());
        return *duration;
    };
    CHECK(ok("0") == 0ns);
    CHECK(ok("1s") == 1s);
    CHECK(ok("500ms") == 500ms);
    CHECK(ok("1m30s") == 90s);
    CHECK(ok("1.5h") == 90min);
    CHECK(ok("2h45m") == 165min);
    CHECK(ok(".5s") == 500ms);
    CHECK(ok("1.s") == 1s);
    CHECK(ok("10us") == 10us);
    CHECK(ok("10\u00b5s") == 10us);
    CHECK(ok("7ns") == 7ns);
    CHECK(ok("+3s") == 3s);
    CHECK(ok("-1.5s") == -1500ms);
    CHECK(ok("1h1m1s1ms1us1ns") == 1h + 1min + 1s + 1ms + 1us + 1ns);
    CHECK(ok("2562047h") == 2562047h);
    for (const char* bad : {"", "1", "s", "1x", "1.5", ".s", "-", "1s2", "9999999999h", "1 s"}) {
        INFO(bad);
        CHECK_FALSE(parse_go_duration(bad).ok());
    }
}

TEST_CASE("Go duration text") {
    CHECK(format_go_duration(0ns) == "0s");
    CHECK(format_go_duration(1s) == "1s");
    CHECK(format_go_duration(90s) == "1m30s");
    CHECK(format_go_duration(1h) == "1h0m0s");
    CHECK(format_go_duration(1500ms) == "1.5s");
    CHECK(format_go_duration(250ms) == "250ms");
    CHECK(format_go_duration(-2s) == "-2s");
    CHECK(format_go_duration(12ns) == "12ns");
}

TEST_CASE("kube-proxy's flag names reach Options") {
    both_forms("--iptables-sync-period", "45s",
               [](const Options& o) { CHECK(o.sync_period == 45s); });
    both_forms("--iptables-min-sync-period", "2s",
               [](const Options& o) { CHECK(o.min_sync_period == 2s); });
    both_forms("--iptables-masquerade-bit", "5",
               [](const Options& o) { CHECK(o.backend.masquerade_mark == 0x20); });
    both_forms("--bind-address", "10.1.2.3",
               [](const Options& o) { CHECK(o.bind_address == *IpAddress::parse("10.1.2.3")); });
    both_forms("--detect-local-mode", "NodeCIDR", [](const Options& o) {
        CHECK(o.backend.local_detect_mode == rules::LocalDetectMode::kNodeCidr);
    });
    both_forms("--conntrack-max-per-core", "0",
               [](const Options& o) { CHECK(o.conntrack.max_per_core == 0); });
    both_forms("--conntrack-min", "1000", [](const Options& o) { CHECK(o.conntrack.min == 1000); });
    both_forms("--conntrack-tcp-timeout-established", "2h",
               [](const Options& o) { CHECK(o.conntrack.tcp_established_timeout == 2h); });
    both_forms("--conntrack-tcp-timeout-close-wait", "30m",
               [](const Options& o) { CHECK(o.conntrack.tcp_close_wait_timeout == 30min); });
    both_forms("--conntrack-udp-timeout", "30s",
               [](const Options& o) { CHECK(o.conntrack.udp_timeout == 30s); });
    both_forms("--conntrack-udp-timeout-stream", "2m",
               [](const Options& o) { CHECK(o.conntrack.udp_stream_timeout == 2min); });
    both_forms("--oom-score-adj", "-1000",
               [](const Options& o) { CHECK(o.oom_score_adj == -1000); });
    both_forms("--healthz-port", "0", [](const Options& o) { CHECK_FALSE(o.healthz_bind); });
    both_forms("--metrics-port", "0", [](const Options& o) { CHECK_FALSE(o.metrics_bind); });
}

TEST_CASE("kube-proxy's defaults for the options it adds") {
    Options options = parse_ok({});
    check_kube_proxy_defaults(options);
    CHECK_FALSE(options.init_only);
    CHECK_FALSE(options.cleanup_kube_proxy);
    CHECK(options.config_file.empty());
    CHECK(options.warnings.empty());
}

TEST_CASE("kube-proxy's boolean flags") {
    CHECK(parse_ok({"--bind-address-hard-fail"}).bind_address_hard_fail);
    CHECK(parse_ok({"--conntrack-tcp-be-liberal=true"}).conntrack.tcp_be_liberal);
    CHECK(parse_ok({"--init-only"}).init_only);
    CHECK(parse_ok({"--cleanup-kube-proxy"}).cleanup_kube_proxy);
    // pflag's spellings of booleans (strconv.ParseBool).
    CHECK(parse_ok({"--masquerade-all=1"}).backend.masquerade_all);
    CHECK(parse_ok({"--masquerade-all=T"}).backend.masquerade_all);
    CHECK_FALSE(parse_ok({"--masquerade-all=F"}).backend.masquerade_all);
    CHECK(parse_error({"--init-only=maybe"}) ==
          "--init-only: \"maybe\" is not a boolean (true or false)");
}

TEST_CASE("the sync periods of the mode in use, as kube-proxy reads them") {
    // The iptables pair serves nftables and iptables mode; the ipvs pair ipvs.
    Options nft = parse_ok({"--iptables-sync-period=40s", "--ipvs-sync-period=50s"});
    CHECK(nft.sync_period == 40s);
    REQUIRE(nft.warnings.size() == 1);
    CHECK(nft.warnings[0] ==
          "--ipvs-sync-period: ignored in nftables mode (kube-proxy reads it in another mode "
          "only)");
    Options ipvs = parse_ok({"--proxy-mode=ipvs", "--ipvs-sync-period=50s",
                             "--ipvs-min-sync-period=5s", "--iptables-sync-period=40s"});
    CHECK(ipvs.sync_period == 50s);
    CHECK(ipvs.min_sync_period == 5s);
    CHECK(ipvs.warnings.size() == 1);
    // The mode may come after the periods.
    CHECK(parse_ok({"--ipvs-sync-period=50s", "--proxy-mode=ipvs"}).sync_period == 50s);
    // Aliases share the row: the last of them wins.
    CHECK(parse_ok({"--sync-period=10s", "--iptables-sync-period=20s"}).sync_period == 20s);
    CHECK(parse_ok({"--iptables-sync-period=20s", "--sync-period=10s"}).sync_period == 10s);
    CHECK(parse_ok({"--masquerade-bit=1", "--iptables-masquerade-bit=2"}).backend.masquerade_mark ==
          4);
    CHECK(
        parse_error({"--proxy-mode=ipvs", "--ipvs-sync-period=1s", "--ipvs-min-sync-period=3s"}) ==
        "--ipvs-sync-period: 1s is shorter than --ipvs-min-sync-period 3s");
}

TEST_CASE("--detect-local-mode and its interfaces") {
    using rules::LocalDetectMode;
    Options bridge =
        parse_ok({"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=cbr0"});
    CHECK(bridge.backend.local_detect_mode == LocalDetectMode::kBridgeInterface);
    CHECK(bridge.backend.local_interface == "cbr0");
    Options prefix =
        parse_ok({"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth"});
    CHECK(prefix.backend.local_detect_mode == LocalDetectMode::kInterfaceNamePrefix);
    CHECK(prefix.backend.local_interface == "veth");
    // The interface of another mode is not used (nor checked, as kube-proxy).
    CHECK(parse_ok({"--pod-bridge-interface=x/y"}).backend.local_interface.empty());
    CHECK(parse_error({"--detect-local-mode=BridgeInterface"}) ==
          "--pod-bridge-interface: must be set when the detect-local mode is BridgeInterface");
    CHECK(parse_error({"--detect-local-mode=InterfaceNamePrefix"}) ==
          "--pod-interface-name-prefix: must be set when the detect-local mode is "
          "InterfaceNamePrefix");
    CHECK(parse_error({"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=a/b"}) ==
          "--pod-bridge-interface: \"a/b\" is not an interface name (no '/', whitespace or NUL)");
    CHECK(
        parse_error({"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=a b"})
            .rfind("--pod-interface-name-prefix: ", 0) == 0);
    CHECK(parse_error({"--detect-local-mode=LinkLocal"}) ==
          "--detect-local-mode: \"LinkLocal\" is not one of ClusterCIDR, NodeCIDR, "
          "BridgeInterface, InterfaceNamePrefix");
}

TEST_CASE("--detect-local-mode: each of its four values, and the interface each needs") {
    using rules::LocalDetectMode;
    // ClusterCIDR is the default: set after another value, it is read, not defaulted.
    Options cluster = parse_ok({"--detect-local-mode=NodeCIDR", "--detect-local-mode=ClusterCIDR",
                                "--cluster-cidr=10.244.0.0/16"});
    CHECK(cluster.backend.local_detect_mode == LocalDetectMode::kClusterCidr);
    CHECK(cluster.backend.cluster_cidrs == std::vector<Prefix>{prefix("10.244.0.0/16")});
    // NodeCIDR needs no interface; the Node's podCIDRs are read by the daemon.
    Options node = parse_ok({"--detect-local-mode", "NodeCIDR"});
    CHECK(node.backend.local_detect_mode == LocalDetectMode::kNodeCidr);
    CHECK(node.backend.local_interface.empty());
    // Values are matched exactly, as kube-proxy's validation does.
    CHECK(parse_error({"--detect-local-mode=nodecidr"})
              .rfind("--detect-local-mode: \"nodecidr\" is not one of", 0) == 0);
    // The other mode's interface flag does not stand in for the one needed.
    CHECK(
        parse_error({"--detect-local-mode=BridgeInterface", "--pod-interface-name-prefix=veth"}) ==
        "--pod-bridge-interface: must be set when the detect-local mode is BridgeInterface");
    CHECK(parse_error({"--detect-local-mode=InterfaceNamePrefix", "--pod-bridge-interface=cbr0"}) ==
          "--pod-interface-name-prefix: must be set when the detect-local mode is "
          "InterfaceNamePrefix");
    // 15 bytes is the longest name the kernel takes.
    CHECK(
        parse_ok({"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=fifteen-chars-x"})
            .backend.local_interface == "fifteen-chars-x");
}

TEST_CASE("interface names the backends refuse are refused at parse time, naming the flag") {
    const std::vector<std::pair<std::string, std::string>> modes = {
        {"BridgeInterface", "--pod-bridge-interface"},
        {"InterfaceNamePrefix", "--pod-interface-name-prefix"}};
    for (const auto& [mode, flag] : modes) {
        INFO(flag);
        auto refused = [&](const std::string& name) {
            return parse_error({"--detect-local-mode=" + mode, flag + "=" + name});
        };
        // The kernel refuses ':'; '*', '+' and '"' would change the meaning
        // of the nft and iptables text the backends write.
        CHECK(refused("eth:0") == flag + ": interface name \"eth:0\" holds the character 0x3a");
        CHECK(refused("a*") == flag + ": interface name \"a*\" holds the character 0x2a");
        CHECK(refused("veth+") == flag + ": interface name \"veth+\" holds the character 0x2b");
        CHECK(refused("a\"b") == flag + ": interface name \"a\"b\" holds the character 0x22");
        // A control character is shown as '?'.
        CHECK(refused("a\x01") == flag + ": interface name \"a?\" holds the character 0x01");
        CHECK(refused("sixteen-chars-xx") ==
              flag + ": \"sixteen-chars-xx\" is not an interface name (1-15 characters)");
        CHECK(refused(".") == flag + ": \".\" is not an interface name");
    }
}

TEST_CASE("kube-proxy flag rejections name the flag") {
    CHECK(parse_error({"--bind-address=10.0.0.1:80"}) ==
          "--bind-address: \"10.0.0.1:80\" is not an IP address");
    CHECK(parse_error({"--iptables-masquerade-bit=32"}) ==
          "--iptables-masquerade-bit: 32 is out of range 0-31");
    CHECK(parse_error({"--oom-score-adj=1001"}) ==
          "--oom-score-adj: 1001 is out of range -1000-1000");
    CHECK(parse_error({"--conntrack-max-per-core=-1"}) ==
          "--conntrack-max-per-core: -1 is out of range 0-2147483647");
    CHECK(parse_error({"--conntrack-min=lots"}) == "--conntrack-min: \"lots\" is not an integer");
    CHECK(parse_error({"--conntrack-udp-timeout=-5s"}) ==
          "--conntrack-udp-timeout: \"-5s\" is negative");
    CHECK(parse_error({"--conntrack-tcp-timeout-established=1d"})
              .rfind("--conntrack-tcp-timeout-established: \"1d\" is not a duration", 0) == 0);
    CHECK(parse_error({"--iptables-sync-period=0s"}) ==
          "--iptables-sync-period: must be greater than 0");
    CHECK(parse_error({"--healthz-port=70000"}) == "--healthz-port: 70000 is out of range 0-65535");
    CHECK(parse_error({"--cleanup-kube-proxy", "--dry-run"}) ==
          "--cleanup-kube-proxy: cannot be combined with --dry-run");
    CHECK(parse_error({"--init-only", "--dry-run"}) ==
          "--init-only: cannot be combined with --dry-run");
    CHECK(parse_error({"--write-config-to=/tmp/x"}) ==
          "--write-config-to: not supported: switchboard does not write kube-proxy configuration "
          "files");
}

TEST_CASE("the deprecated port flags give the port of a bind address without one") {
    // kube-proxy's addressFromDeprecatedFlags: an address with a port keeps it.
    CHECK(parse_ok({"--healthz-port=9000"}).healthz_bind == host_port("0.0.0.0:10256"));
    CHECK(parse_ok({"--healthz-port=9000", "--healthz-bind-address=127.0.0.1"}).healthz_bind ==
          host_port("127.0.0.1:9000"));
    CHECK(parse_ok({"--metrics-bind-address=::", "--metrics-port=9001"}).metrics_bind ==
          host_port("[::]:9001"));
}

TEST_CASE("the IPVS flags reach the backend options with kube-proxy's meanings") {
    Options options = parse_ok({"--proxy-mode=ipvs", "--ipvs-scheduler=sh",
                                "--ipvs-exclude-cidrs=10.0.0.0/8,fd00::/64", "--ipvs-strict-arp",
                                "--ipvs-tcp-timeout=15m", "--ipvs-tcpfin-timeout=30s",
                                "--ipvs-udp-timeout=1500ms"});
    CHECK(options.warnings.empty());
    CHECK(options.backend.ipvs_scheduler == "sh");
    REQUIRE(options.backend.ipvs_exclude_cidrs.size() == 2);
    CHECK(options.backend.ipvs_exclude_cidrs[1].to_string() == "fd00::/64");
    CHECK(options.backend.ipvs_strict_arp);
    CHECK(options.backend.ipvs_tcp_timeout_seconds == 900);
    CHECK(options.backend.ipvs_tcp_fin_timeout_seconds == 30);
    CHECK(options.backend.ipvs_udp_timeout_seconds == 1);  // whole seconds, rounded down
    const Options defaults = parse_ok({"--proxy-mode=ipvs"});
    CHECK(defaults.backend.ipvs_tcp_timeout_seconds == 0);  // 0: the kernel's
    CHECK_FALSE(defaults.backend.ipvs_strict_arp);
    CHECK(parse_error({"--ipvs-exclude-cidrs=10.0.0.0/33"}).rfind("--ipvs-exclude-cidrs: ", 0) ==
          0);
    CHECK(parse_error({"--ipvs-tcp-timeout=-1s"}).rfind("--ipvs-tcp-timeout: ", 0) == 0);
}

TEST_CASE("kube-proxy flags without meaning here are accepted with one warning each") {
    Options options = parse_ok({"--feature-gates=Foo=true", "--profiling", "--kube-api-qps", "20",
                                "--kube-api-burst=30", "--kube-api-content-type=application/json",
                                "--config-sync-period=1m", "--show-hidden-metrics-for-version=1.30",
                                "--feature-gates=Bar=false", "--log_dir=/var/log",
                                "--alsologtostderr", "--proxy-mode=iptables"});
    CHECK(options.proxy_mode == ProxyMode::kIptables);  // the flags after them still count
    std::vector<std::string> expected_flags{"--feature-gates",
                                            "--profiling",
                                            "--kube-api-qps",
                                            "--kube-api-burst",
                                            "--kube-api-content-type",
                                            "--config-sync-period",
                                            "--show-hidden-metrics-for-version",
                                            "--log_dir",
                                            "--alsologtostderr"};
    REQUIRE(options.warnings.size() == expected_flags.size());  // --feature-gates twice: once
    for (size_t i = 0; i < expected_flags.size(); ++i) {
        CHECK(options.warnings[i].rfind(expected_flags[i] + ": accepted for kube-proxy "
                                                            "compatibility and ignored: ",
                                        0) == 0);
        CHECK(options.warnings[i].find('\n') == std::string::npos);
    }
    // A boolean one does not swallow the next argument; a valued one does.
    CHECK(parse_ok({"--profiling", "--proxy-mode=ipvs"}).proxy_mode == ProxyMode::kIpvs);
    CHECK(parse_error({"--kube-api-qps"}) == "--kube-api-qps: needs a value");
}

TEST_CASE("flag names as pflag normalises them; -v spellings") {
    CHECK(parse_ok({"--hostname_override=n2"}).node_name == "n2");
    CHECK(parse_ok({"-v=3"}).verbosity == 3);
    CHECK(parse_ok({"-v3"}).verbosity == 3);
    CHECK(parse_ok({"--v=5"}).verbosity == 5);
    CHECK(parse_error({"-x"}) == "-x: unknown flag (see --help)");
    CHECK(parse_error({"--no-such-flag=1"}) == "--no-such-flag: unknown flag (see --help)");
}

TEST_CASE("--version and --help answer first") {
    CHECK(parse_ok({"--version"}).command == Command::kVersion);
    CHECK(parse_ok({"--version=raw"}).command == Command::kVersion);
    CHECK(parse_ok({"--version=false"}).command == Command::kRun);
    // Even with a value that would be refused later, as kube-proxy's verflag.
    CHECK(parse_ok({"--proxy-mode=bogus", "--version"}).command == Command::kVersion);
    CHECK(version_text().rfind("switchboard ", 0) == 0);
    CHECK(usage().find("--iptables-sync-period, --sync-period") != std::string::npos);
    CHECK(usage().find("--feature-gates") != std::string::npos);
    CHECK(usage().find("--write-config-to") != std::string::npos);
}

TEST_CASE("a value holding control characters is still refused in one line") {
    // parse_error() checks the single line; the value shows its newline as '?'.
    CHECK(parse_error({"--conntrack-min=1\n2"}) == "--conntrack-min: \"1?2\" is not an integer");
    CHECK(parse_error({"--iptables-sync-period=1s\n\x7f"})
              .rfind("--iptables-sync-period: \"1s??\" is not a duration", 0) == 0);
    CHECK(parse_error({"--pod-bridge-interface=a\nb", "--detect-local-mode=BridgeInterface"})
              .find("\"a?b\"") != std::string::npos);
}

TEST_CASE("--dns-local-address takes node-local DNS addresses, refusing the ones no node can own") {
    auto options = parse_ok({"--dns-local-address=10.96.0.10, 169.254.20.10,fd00:96::53"});
    REQUIRE(options.dns_local_addresses.size() == 3);
    CHECK(options.dns_local_addresses[0] == *IpAddress::parse("10.96.0.10"));
    CHECK(options.dns_local_addresses[2] == *IpAddress::parse("fd00:96::53"));
    CHECK(parse_ok({}).dns_local_addresses.empty());
    for (const char* bad : {"10.96.0", "127.0.0.1", "0.0.0.0", "224.0.0.1", "fe80::1", "::1"}) {
        INFO(bad);
        CHECK(parse_error({std::string("--dns-local-address=") + bad})
                  .rfind("--dns-local-address: ", 0) == 0);
    }
    CHECK(parse_error({"--dns-local-address=10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5,"
                       "10.0.0.6,10.0.0.7,10.0.0.8,10.0.0.9"})
              .rfind("--dns-local-address: ", 0) == 0);
}

TEST_CASE("--dns-corefile: kubeadm's Corefile configures DNS; a syntax error is PATH:LINE") {
    const std::string kubeadm_corefile =
        ".:53 {\n"
        "    errors\n"
        "    health {\n"
        "       lameduck 5s\n"
        "    }\n"
        "    ready\n"
        "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n"
        "       pods insecure\n"
        "       fallthrough in-addr.arpa ip6.arpa\n"
        "       ttl 30\n"
        "    }\n"
        "    prometheus :9153\n"
        "    forward . 192.0.2.53 {\n"
        "       max_concurrent 1000\n"
        "    }\n"
        "    cache 30\n"
        "    loop\n"
        "    reload\n"
        "    loadbalance\n"
        "}\n";
    Environment environment = kEnvironment;
    std::string served;
    environment.read_file = [&](const std::string& path) -> Result<std::string> {
        if (path == "/etc/coredns/Corefile") return served;
        return make_error(ErrorCode::kInvalidArgument, path + ": No such file or directory");
    };
    served = kubeadm_corefile;
    auto options = parse_ok(
        {"--dns-corefile=/etc/coredns/Corefile", "--dns-ttl=5", "--dns-listen=127.0.0.1:5300"},
        environment);
    CHECK(options.dns.cluster_domain == "cluster.local");
    CHECK(options.dns.ttl == 30);  // the Corefile wins over --dns-ttl
    CHECK(options.dns.pods == dns::PodRecords::kInsecure);
    REQUIRE(options.dns.upstreams.size() == 1);
    CHECK(options.dns.upstreams[0] == host_port("192.0.2.53:53"));
    REQUIRE(options.dns.listen.size() == 1);
    CHECK(options.dns.listen[0] == host_port("127.0.0.1:53"));  // the block's port
    // The typed configuration reaches the daemon, for CoreDNS's endpoints.
    REQUIRE(options.dns_corefile_config.servers.size() == 1);
    const auto& server = options.dns_corefile_config.servers[0];
    CHECK(server.prometheus == dns::HttpListen{"", 9153});
    REQUIRE(server.health);
    CHECK(server.health->lameduck == std::chrono::seconds(5));
    CHECK(server.ready == dns::HttpListen{"", 8181});

    served = ".:53 {\n    kubernetes cluster.local {\n        ttl 99999\n    }\n}\n";
    auto error = parse_flags({"--dns-corefile=/etc/coredns/Corefile"}, environment);
    REQUIRE_FALSE(error.ok());
    CHECK(error.error().code == ErrorCode::kInvalidArgument);
    CHECK(error.error().message.rfind("/etc/coredns/Corefile:3: ", 0) == 0);
    CHECK(error.error().message.find('\n') == std::string::npos);

    auto missing = parse_flags({"--dns-corefile=/nope"}, environment);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.rfind("--dns-corefile: /nope", 0) == 0);
}
