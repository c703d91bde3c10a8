// Flags: every flag in both forms, defaults, and every rejection's message.
#include <catch.hpp>

#include "proxy/flags.h"

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
    both_forms("--masquerade-bit", "3",
               [](const Options& o) { CHECK(o.backend.masquerade_mark == 0x8); });
    both_forms("--v", "4", [](const Options& o) { CHECK(o.verbosity == 4); });
    both_forms("-v", "2", [](const Options& o) { CHECK(o.verbosity == 2); });
}

TEST_CASE("boolean flags stand alone or take =true/=false, as pflag's do") {
    CHECK(parse_ok({"--masquerade-all"}).backend.masquerade_all);
    CHECK(parse_ok({"--masquerade-all=true"}).backend.masquerade_all);
    CHECK_FALSE(parse_ok({"--masquerade-all=false"}).backend.masquerade_all);
    CHECK(parse_ok({"--dry-run"}).dry_run);
    // "--masquerade-all true": the value is a stray argument (pflag agrees).
    CHECK(parse_error({"--masquerade-all", "true"}).find("true") != std::string::npos);
    CHECK(parse_ok({"--cleanup"}).cleanup);
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
    CHECK(parse_error({"--cluster-domain=bad_domain"}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--cluster-domain=-a.b"}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--cluster-domain="}).rfind("--cluster-domain: ", 0) == 0);
    CHECK(parse_error({"--dns-listen=1.2.3.4:0"}).rfind("--dns-listen: ", 0) == 0);
    CHECK(parse_error({"--dns-ttl=3601"}) == "--dns-ttl: 3601 is out of range 0-3600");
    CHECK(parse_error({"--dns-ttl=ten"}) == "--dns-ttl: \"ten\" is not an integer");
    CHECK(parse_error({"--dns-pods=all"}) ==
          "--dns-pods: \"all\" is not one of disabled, insecure, verified");
    CHECK(parse_error({"--dns-upstream=not-an-ip"}).rfind("--dns-upstream: ", 0) == 0);
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
