// From parsed Corefile to typed configuration: CoreDNS's defaults, its
// argument checks, warnings for plugins switchboard lacks, and the DnsOptions
// the cluster block sets.
#include <unistd.h>
#include <catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "dns/corefile/config.h"
#include "dns/corefile/options.h"

using namespace sb;
using namespace sb::dns;
using std::chrono::milliseconds;

namespace {

// kubeadm's default ConfigMap (cmd/kubeadm/app/phases/addons/dns/manifests.go)
// with DNSDomain cluster.local.
constexpr std::string_view kKubeadmCorefile = R"(.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . )" SWITCHBOARD_TEST_DATA R"(/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
)";

// k3s's default (manifests/coredns.yaml) without its two import lines.
constexpr std::string_view kK3sCorefile = R"(.:53 {
    errors
    health
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    hosts /etc/coredns/NodeHosts {
      ttl 60
      reload 15s
      fallthrough
    }
    prometheus :9153
    forward . )" SWITCHBOARD_TEST_DATA R"(/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
)";

CorefileConfig map_ok(std::string_view text) {
    auto parsed = parse_corefile(text, "Corefile", nullptr);
    INFO((parsed ? std::string() : parsed.error().message));
    REQUIRE(parsed.ok());
    auto config = map_corefile(*parsed, "Corefile");
    INFO((config ? std::string() : config.error().message));
    REQUIRE(config.ok());
    return *config;
}

ServerConfig server_ok(std::string_view text) {
    auto config = map_ok(text);
    REQUIRE(config.servers.size() == 1);
    return config.servers[0];
}

std::string map_error(std::string_view text) {
    auto parsed = parse_corefile(text, "Corefile", nullptr);
    REQUIRE(parsed.ok());
    auto config = map_corefile(*parsed, "Corefile");
    REQUIRE_FALSE(config.ok());
    return config.error().message;
}

// One directive in a `.:53` block, line 2.
std::string block_error(std::string_view directive) {
    return map_error(".:53 {\n" + std::string(directive) + "\n}\n");
}
ServerConfig block_ok(std::string_view directives) {
    return server_ok(".:53 {\n" + std::string(directives) + "\n}\n");
}

HostPort hp(std::string_view text) {
    return *parse_host_port(text, 53);
}

}  // namespace

TEST_CASE("corefile config: kubeadm's default Corefile") {
    auto config = map_ok(kKubeadmCorefile);
    CHECK(config.warnings.empty());
    REQUIRE(config.servers.size() == 1);
    const auto& s = config.servers[0];
    CHECK(s.zones == std::vector<std::string>{"."});
    CHECK(s.port == 53);
    CHECK(s.errors);
    REQUIRE(s.health);
    CHECK(s.health->listen == HttpListen{"", 8080});
    CHECK(s.health->lameduck == milliseconds(5000));
    REQUIRE(s.ready);
    CHECK(*s.ready == HttpListen{"", 8181});
    REQUIRE(s.kubernetes);
    CHECK(s.kubernetes->zones ==
          std::vector<std::string>{"cluster.local.", "in-addr.arpa.", "ip6.arpa."});
    CHECK(s.kubernetes->pods == PodRecords::kInsecure);
    REQUIRE(s.kubernetes->fallthrough);
    CHECK(s.kubernetes->fallthrough->zones ==
          std::vector<std::string>{"in-addr.arpa.", "ip6.arpa."});
    CHECK(s.kubernetes->ttl == 30);
    CHECK(s.kubernetes->line == 7);
    REQUIRE(s.prometheus);
    CHECK(*s.prometheus == HttpListen{"", 9153});
    REQUIRE(s.forwards.size() == 1);
    CHECK(s.forwards[0].from == ".");
    REQUIRE(s.forwards[0].to.size() == 1);
    CHECK_FALSE(s.forwards[0].to[0].address);
    CHECK(s.forwards[0].to[0].resolv_conf == SWITCHBOARD_TEST_DATA "/resolv.conf");
    CHECK(s.forwards[0].max_concurrent == 1000);
    REQUIRE(s.cache);
    CHECK(s.cache->max_ttl == 30);
    CHECK(s.cache->disable_success == std::vector<std::string>{"cluster.local."});
    CHECK(s.cache->disable_denial == std::vector<std::string>{"cluster.local."});
    CHECK(s.loop);
    REQUIRE(s.reload);
    CHECK(s.reload->interval == milliseconds(30000));
    CHECK(s.reload->jitter == milliseconds(15000));
    CHECK(s.loadbalance);
    CHECK(s.log.empty());
    CHECK_FALSE(s.hosts);
    CHECK(s.bind.empty());
}

TEST_CASE("corefile config: k3s's default Corefile, its NodeHosts file") {
    auto config = map_ok(kK3sCorefile);
    CHECK(config.warnings.empty());
    const auto& s = config.servers.at(0);
    REQUIRE(s.hosts);
    CHECK(s.hosts->file == "/etc/coredns/NodeHosts");
    CHECK(s.hosts->ttl == 60);
    CHECK(s.hosts->reload == milliseconds(15000));
    REQUIRE(s.hosts->fallthrough);
    CHECK(s.hosts->fallthrough->zones.empty());
    CHECK(s.kubernetes->ttl == 5);  // CoreDNS's default
    REQUIRE(s.health);
    CHECK(s.health->lameduck == milliseconds(0));
    CHECK(s.cache->max_ttl == 30);
    CHECK_FALSE(s.cache->disable_success);
    CHECK(s.forwards.at(0).max_concurrent == 0);
}

TEST_CASE("corefile config: a stub-domain block") {
    auto config =
        map_ok(std::string(kKubeadmCorefile) +
               "consul.local:53 {\n    errors\n    cache 30\n    forward . 10.0.0.5\n}\n");
    REQUIRE(config.servers.size() == 2);
    const auto& stub = config.servers[1];
    CHECK(stub.zones == std::vector<std::string>{"consul.local."});
    CHECK(stub.port == 53);
    CHECK(stub.line == 24);
    CHECK(stub.errors);
    CHECK(stub.cache->max_ttl == 30);
    REQUIRE(stub.forwards.size() == 1);
    CHECK(stub.forwards[0].from == ".");
    REQUIRE(stub.forwards[0].to.size() == 1);
    CHECK(stub.forwards[0].to[0].address == hp("10.0.0.5"));
    CHECK_FALSE(stub.kubernetes);
}

TEST_CASE("corefile config: defaults where an option is absent") {
    auto s = block_ok("kubernetes\ncache\nhosts\nprometheus\nforward . 1.1.1.1");
    CHECK(s.kubernetes->zones == std::vector<std::string>{"."});
    CHECK(s.kubernetes->pods == PodRecords::kDisabled);
    CHECK_FALSE(s.kubernetes->fallthrough);
    CHECK_FALSE(s.cache->max_ttl);  // CoreDNS's 3600 s success, 1800 s denial
    CHECK(s.cache->success_capacity == 9984);
    CHECK(s.cache->denial_capacity == 9984);
    CHECK_FALSE(s.cache->serve_stale);
    CHECK(s.hosts->file == "/etc/hosts");
    CHECK(s.hosts->ttl == 3600);
    CHECK(s.hosts->reload == milliseconds(5000));
    CHECK(*s.prometheus == HttpListen{"localhost", 9153});
    CHECK(s.forwards[0].policy == ForwardPolicy::kRandom);
    CHECK(s.forwards[0].health_check == milliseconds(500));
}

TEST_CASE("corefile config: every kubernetes option") {
    auto s = block_ok(
        "kubernetes Cluster.Example {\n pods verified\n fallthrough\n ttl 0\n "
        "endpoint_pod_names\n noendpoints\n}");
    CHECK(s.kubernetes->zones == std::vector<std::string>{"cluster.example."});
    CHECK(s.kubernetes->pods == PodRecords::kVerified);
    CHECK(s.kubernetes->fallthrough->zones.empty());
    CHECK(s.kubernetes->ttl == 0);
    CHECK(s.kubernetes->endpoint_pod_names);
    CHECK(s.kubernetes->noendpoints);
    CHECK(block_ok("kubernetes {\n pods disabled\n ttl 3600\n}").kubernetes->pods ==
          PodRecords::kDisabled);
}

TEST_CASE("corefile config: every forward option") {
    auto s = block_ok(
        "forward example.org 10.0.0.1 dns://10.0.0.2:5353 [fd00::1]:53 "
        "fd00::2 " SWITCHBOARD_TEST_DATA
        "/resolv.conf {\n"
        " max_concurrent 50\n policy sequential\n health_check 1.5s\n force_tcp\n prefer_udp\n"
        " except a.example.org B.example.org\n}");
    const auto& f = s.forwards.at(0);
    CHECK(f.from == "example.org.");
    REQUIRE(f.to.size() == 5);
    CHECK(f.to[0].address == hp("10.0.0.1"));
    CHECK(f.to[1].address == hp("10.0.0.2:5353"));
    CHECK(f.to[2].address == hp("[fd00::1]:53"));
    CHECK(f.to[3].address == hp("[fd00::2]:53"));
    CHECK(f.to[4].resolv_conf == SWITCHBOARD_TEST_DATA "/resolv.conf");
    CHECK(f.max_concurrent == 50);
    CHECK(f.policy == ForwardPolicy::kSequential);
    CHECK(f.health_check == milliseconds(1500));
    CHECK(f.force_tcp);
    CHECK(f.prefer_udp);
    CHECK(f.except == std::vector<std::string>{"a.example.org.", "b.example.org."});
    CHECK(block_ok("forward . 1.1.1.1 {\n policy round_robin\n}").forwards[0].policy ==
          ForwardPolicy::kRoundRobin);
    CHECK(block_ok("forward . 1.1.1.1 {\n policy random\n}").forwards[0].policy ==
          ForwardPolicy::kRandom);
    auto two = block_ok("forward consul.local 10.0.0.5\nforward . 1.1.1.1");
    CHECK(two.forwards.size() == 2);
}

TEST_CASE("corefile config: every cache option") {
    auto s = block_ok(
        "cache 600 example.org 10.0.0.0/8 {\n success 5000 300 10\n denial 100 60\n"
        " serve_stale 10m verify\n disable success\n}");
    const auto& c = *s.cache;
    CHECK(c.max_ttl == 600);
    CHECK(c.zones == std::vector<std::string>{"example.org.", "10.in-addr.arpa."});
    CHECK(c.success_capacity == 5000);
    CHECK(c.success_ttl == 300u);
    CHECK(c.success_min_ttl == 10u);
    CHECK(c.denial_capacity == 100);
    CHECK(c.denial_ttl == 60u);
    CHECK_FALSE(c.denial_min_ttl);
    CHECK(c.serve_stale == milliseconds(600000));
    CHECK(c.serve_stale_verify);
    REQUIRE(c.disable_success);
    CHECK(c.disable_success->empty());
    CHECK_FALSE(c.disable_denial);
    CHECK(block_ok("cache {\n serve_stale\n}").cache->serve_stale == milliseconds(3600000));
    CHECK_FALSE(block_ok("cache {\n serve_stale 1m immediate\n}").cache->serve_stale_verify);
    // A first argument that is not an integer is a zone, even one starting with a digit.
    auto zones_only = block_ok("cache 10.0.0.0/8 example.org").cache;
    CHECK_FALSE(zones_only->max_ttl);
    CHECK(zones_only->zones == std::vector<std::string>{"10.in-addr.arpa.", "example.org."});
}

TEST_CASE("corefile config: prometheus, health, ready, reload, bind, log, errors") {
    auto s = block_ok(
        "prometheus 127.0.0.1:9253\nhealth [::1]:8090 {\n lameduck 1m30s\n}\nready localhost:8282\n"
        "reload 10s 5s\nbind 127.0.0.1 ::1\nlog . {\n class denial error\n}\nerrors stdout");
    CHECK(*s.prometheus == HttpListen{"127.0.0.1", 9253});
    CHECK(s.health->listen == HttpListen{"::1", 8090});
    CHECK(s.health->lameduck == milliseconds(90000));
    CHECK(*s.ready == HttpListen{"localhost", 8282});
    CHECK(s.reload->interval == milliseconds(10000));
    CHECK(s.reload->jitter == milliseconds(5000));
    CHECK(s.bind ==
          std::vector<IpAddress>{*IpAddress::parse("127.0.0.1"), *IpAddress::parse("::1")});
    REQUIRE(s.log.size() == 1);
    CHECK(s.log[0].name == ".");
    CHECK(s.log[0].classes == (kClassDenial | kClassError));
    CHECK(s.errors);
    // An interval alone keeps the jitter at most half of it; so does a jitter given (CoreDNS).
    CHECK(block_ok("reload 4s").reload->jitter == milliseconds(2000));
    CHECK(block_ok("reload 10s 6s").reload->jitter == milliseconds(5000));
}

TEST_CASE("corefile config: log rules as CoreDNS's log setup reads them") {
    auto s =
        block_ok("log\nlog example.org\nlog a.org B.org \"{name} {type}\" {\n class success\n}");
    REQUIRE(s.log.size() == 4);
    CHECK(s.log[0].name == ".");
    CHECK(s.log[0].format == kCommonLogFormat);
    CHECK(s.log[0].classes == kClassAll);
    CHECK(s.log[1].name == "example.org.");
    CHECK(s.log[2].name == "a.org.");
    CHECK(s.log[3].name == "b.org.");
    CHECK(s.log[3].format == "{name} {type}");
    CHECK(s.log[3].classes == kClassSuccess);
    CHECK(block_ok("log . {combined}").log[0].format == "{combined}");
    CHECK(block_ok("log {\n minDuration\n}").log[0].min_duration == milliseconds(100));
    CHECK(block_ok("log {\n minDuration 2s\n}").log[0].min_duration == milliseconds(2000));
    CHECK(block_error("log {\n class none\n}") ==
          "Corefile:3: class: \"none\" is not one of all, success, denial, error");
    CHECK(block_error("log {\n level 2\n}") == "Corefile:3: log: unknown property \"level\"");
}

TEST_CASE("corefile config: hosts with inline entries") {
    auto s = block_ok(
        "hosts /etc/coredns/NodeHosts example.org {\n 10.0.0.1 Node-1 node-1.example.org\n"
        " fd00::1 node-1\n ttl 1\n no_reverse\n reload 0\n fallthrough in-addr.arpa\n}");
    const auto& h = *s.hosts;
    CHECK(h.file == "/etc/coredns/NodeHosts");
    CHECK(h.zones == std::vector<std::string>{"example.org."});
    REQUIRE(h.inline_entries.size() == 2);
    CHECK(h.inline_entries[0].address == *IpAddress::parse("10.0.0.1"));
    CHECK(h.inline_entries[0].names == std::vector<std::string>{"node-1.", "node-1.example.org."});
    CHECK(h.inline_entries[1].address == *IpAddress::parse("fd00::1"));
    CHECK(h.ttl == 1);  // 1-65535, as CoreDNS
    CHECK(h.no_reverse);
    CHECK(h.reload == milliseconds(0));
    CHECK(h.fallthrough->zones == std::vector<std::string>{"in-addr.arpa."});
}

TEST_CASE("corefile config: unsupported plugins and options warn once, with the line") {
    auto config = map_ok(
        ".:53 {\n  rewrite name a b\n  template IN A example.org {\n    answer \"x\"\n  }\n"
        "  kubernetes cluster.local {\n    namespaces default\n  }\n"
        "  forward . 1.1.1.1 {\n    max_idle_conns 4\n  }\n  cache {\n    prefetch 10\n  "
        "}\n"
        "}\n"
        "example.org {\n  rewrite name c d\n  file /zones/example.org\n}\n");
    CHECK(config.warnings == std::vector<std::string>{
                                 "Corefile:2: plugin \"rewrite\" is not supported; the server "
                                 "runs without it",
                                 "Corefile:3: plugin \"template\" is not supported; the server "
                                 "runs without it",
                                 "Corefile:7: kubernetes option \"namespaces\" is not "
                                 "supported; ignored",
                                 "Corefile:10: forward option max_idle_conns does not change an "
                                 "answer here (switchboard keeps no connection pool); ignored",
                                 "Corefile:13: cache option \"prefetch\" is not supported; ignored",
                                 "Corefile:18: plugin \"file\" is not supported; the server runs "
                                 "without it",
                             });
}

TEST_CASE("corefile config: bad arguments are errors with their line") {
    CHECK(block_error("frobnicate") == "Corefile:2: unknown directive \"frobnicate\"");
    CHECK(block_error("kubernetes {\n ttl 3601\n}") ==
          "Corefile:3: ttl: 3601 is out of range 0-3600");
    CHECK(block_error("kubernetes {\n ttl -1\n}") == "Corefile:3: ttl: -1 is out of range 0-3600");
    CHECK(block_error("kubernetes {\n ttl x\n}") == "Corefile:3: ttl: \"x\" is not an integer");
    CHECK(block_error("kubernetes {\n pods open\n}") ==
          "Corefile:3: pods: \"open\" is not one of disabled, insecure, verified");
    CHECK(block_error("kubernetes {\n pods\n}") ==
          "Corefile:3: pods: wrong argument count (0, wants 1)");
    CHECK(block_error("kubernetes {\n frob\n}") ==
          "Corefile:3: kubernetes: unknown property \"frob\"");
    CHECK(block_error("kubernetes {\n noendpoints yes\n}") ==
          "Corefile:3: noendpoints: wrong argument count (1, wants 0)");
    CHECK(block_error("forward .") == "Corefile:2: forward: wrong argument count (1, wants 2-16)");
    // DNS over HTTPS (and any scheme but dns://): refused, not taken for a
    // file name because of its '/'.
    CHECK(block_error("forward . https://dns.google/dns-query") ==
          "Corefile:2: forward: \"https://dns.google/dns-query\": \"https\":// upstreams are "
          "not supported (forward takes dns://, tls:// and plain addresses)");
    CHECK(block_error("forward . 1.1.1.1 grpc://10.0.0.1/x").find("\"grpc\":// upstreams") !=
          std::string::npos);
    // CoreDNS: what is not an IP address is a file (parse.HostPortOrFile).
    CHECK(block_error("forward . dns.google") ==
          "Corefile:2: forward: not an IP address or file \"dns.google\": No such file or "
          "directory");
    CHECK(block_error("forward . 1.1.1.1:99999") ==
          "Corefile:2: forward: not an IP address or file \"1.1.1.1:99999\": No such file or "
          "directory");
    CHECK(block_error("forward . 1.1.1.1\nforward . 8.8.8.8") ==
          "Corefile:3: forward \".\" is already defined at line 2");
    CHECK(block_error("forward . 1.1.1.1 {\n policy fastest\n}") ==
          "Corefile:3: policy: \"fastest\" is not one of random, round_robin, sequential");
    CHECK(block_error("forward . 1.1.1.1 {\n health_check soon\n}") ==
          "Corefile:3: health_check: \"soon\" is not a duration (e.g. 500ms, 5s, 1m30s)");
    CHECK(block_error("forward . 1.1.1.1 {\n max_concurrent -1\n}") ==
          "Corefile:3: max_concurrent: -1 is out of range 0-2147483647");
    CHECK(block_error("forward . 1.1.1.1 {\n bogus\n}") ==
          "Corefile:3: forward: unknown property \"bogus\"");
    CHECK(block_error("cache 0") == "Corefile:2: cache: 0 is out of range 1-2147483647");
    CHECK(block_error("cache {\n success\n}") ==
          "Corefile:3: success: wrong argument count (0, wants 1-3)");
    CHECK(block_error("cache {\n denial 10 0\n}") ==
          "Corefile:3: denial: 0 is out of range 1-2147483647");
    CHECK(block_error("cache {\n disable everything\n}") ==
          "Corefile:3: disable: \"everything\" is not one of success, denial");
    CHECK(block_error("cache {\n serve_stale -1s\n}") ==
          "Corefile:3: serve_stale: negative DURATION \"-1s\"");
    CHECK(block_error("cache {\n serve_stale 1h immediate 30s\n}") ==
          "Corefile:3: serve_stale: a RESPONSE_TTL other than 0 is not supported (stale answers "
          "have TTL 0 and a refresh waits for the upstream)");
    CHECK(block_error("cache {\n serve_stale 1h verify 100ms\n}")
              .find("a VERIFY_TIMEOUT other than 0 is not supported") != std::string::npos);
    CHECK(block_error("cache {\n serve_stale 1h immediate 0 5m1s\n}") ==
          "Corefile:3: serve_stale: FAILURE_RECHECK cannot exceed 5 minutes");
    CHECK(block_error("cache {\n serve_stale\n serve_stale_policy prefer_positive\n}") ==
          "Corefile:4: serve_stale_policy prefer_positive is not supported (a cached denial is "
          "answered before a stale positive answer)");
    CHECK(block_error("cache {\n serve_stale_policy prefer_positive\n}") ==
          "Corefile:3: serve_stale_policy requires serve_stale");
    CHECK(block_error("cache {\n serve_stale 1h later\n}") ==
          "Corefile:3: serve_stale: \"later\" is not one of immediate, verify");
    CHECK(block_error("prometheus 9153") ==
          "Corefile:2: prometheus: \"9153\" is not an address (HOST:PORT or :PORT)");
    CHECK(block_error("prometheus example.org:9153") ==
          "Corefile:2: prometheus: \"example.org:9153\": \"example.org\" is not an IP address or "
          "localhost");
    CHECK(block_error("ready :0") == "Corefile:2: ready: \":0\": port 0 is out of range 1-65535");
    CHECK(block_error("health {\n lameduck\n}") ==
          "Corefile:3: lameduck: wrong argument count (0, wants 1)");
    CHECK(block_error("health {\n lameduck 5x\n}") ==
          "Corefile:3: lameduck: \"5x\" is not a duration (e.g. 500ms, 5s, 1m30s)");
    CHECK(block_error("reload 1s") == "Corefile:2: reload: interval must be at least 2s");
    CHECK(block_error("reload 10s 500ms") == "Corefile:2: reload: jitter must be 0 or at least 1s");
    CHECK(block_error("bind eth0") ==
          "Corefile:2: bind: \"eth0\" is not an IP address (interface names are not supported: "
          "list the interface's addresses)");
    CHECK(block_error("bind") ==
          "Corefile:2: bind: at least one address or interface name is expected");
    CHECK(block_error("bind 127.0.0.1 {\n except 127.0.0.1\n}") ==
          "Corefile:2: bind: every address is excepted");
    CHECK(block_error("loop now") == "Corefile:2: loop: wrong argument count (1, wants 0)");
    CHECK(block_error("loadbalance weighted /etc/weights") ==
          "Corefile:2: loadbalance: policy weighted is not supported (round_robin only)");
    CHECK(block_error("loadbalance fleeb") == "Corefile:2: loadbalance: unknown policy \"fleeb\"");
    CHECK(block_error("errors loudly") ==
          "Corefile:2: errors: invalid log file \"loudly\" (only stdout)");
    CHECK(block_error("errors stacktrace") ==
          "Corefile:2: errors: invalid log file \"stacktrace\" (only stdout)");
    // errors' block, as CoreDNS's errorsParse and parseConsolidate check it.
    CHECK(block_error("errors {\n consolidate 5m\n}") ==
          "Corefile:3: consolidate: wrong argument count (1, wants 2-4)");
    CHECK(block_error("errors {\n consolidate soon \".*\"\n}")
              .rfind("Corefile:3: consolidate: \"soon\" is not a duration", 0) == 0);
    CHECK(block_error("errors {\n consolidate 5m x loud\n}") ==
          "Corefile:3: consolidate: \"loud\" is not one of warning, error, info, debug, "
          "show_first");
    CHECK(block_error("errors {\n panicRecoveryStacktrace\n}") ==
          "Corefile:3: errors: unknown property \"panicRecoveryStacktrace\"");
    CHECK(block_error("errors {\n bogus\n}") == "Corefile:3: errors: unknown property \"bogus\"");
    // health_check's options: no_rec, domain NAME (CoreDNS's parseBlock).
    CHECK(block_error("forward . 1.1.1.1 {\n health_check 5s domain\n}") ==
          "Corefile:3: health_check: domain needs a NAME");
    CHECK(block_error("forward . 1.1.1.1 {\n health_check 5s domain bad..name\n}") ==
          "Corefile:3: health_check: invalid domain name \"bad..name\"");
    CHECK(block_error("forward . 1.1.1.1 {\n health_check 5s loud\n}") ==
          "Corefile:3: health_check: unknown option \"loud\"");
    // hosts: inline entries only before fallthrough (CoreDNS: unknown property).
    CHECK(block_error("hosts {\n fallthrough\n 10.0.0.1 a.example\n}") ==
          "Corefile:4: hosts: unknown property \"10.0.0.1\" (inline entries come before "
          "fallthrough)");
    CHECK(block_error("hosts {\n 10.0.0.1\n}") == "Corefile:3: hosts: \"10.0.0.1\" has no name");
    CHECK(block_error("hosts {\n ttl 70000\n}") ==
          "Corefile:3: ttl: 70000 is out of range 1-65535");
    CHECK(block_error("hosts {\n ttl 0\n}") == "Corefile:3: ttl: 0 is out of range 1-65535");
    CHECK(block_error("hosts {\n fallthrough_unsupported\n}") ==
          "Corefile:2: hosts: fallthrough_unsupported requires fallthrough");
    CHECK(block_error("hosts {\n nodes here\n}") ==
          "Corefile:3: hosts: \"nodes\" is neither an option nor an IP address");
    CHECK(block_error("cache 30\ncache 60") ==
          "Corefile:3: cache can only be used once per server block (also at line 2)");
    CHECK(map_error(".:53 {\n}\n.:53 {\n}\n") ==
          "Corefile:3: zone \".:53\" is already served by the block at line 1");
    // CoreDNS's zone overlap check: one address twice, or every address
    // (no bind) beside some address, in either order.
    CHECK(map_error(".:53 {\n bind 127.0.0.1 127.0.0.2\n}\n.:53 {\n bind 127.0.0.2\n}\n") ==
          "Corefile:4: zone \".:53\" is already served by the block at line 1");
    CHECK(map_error(".:53 {\n bind 127.0.0.1\n}\n.:53 {\n}\n") ==
          "Corefile:4: zone \".:53\" on every address (no bind) overlaps the block at line 1, "
          "which serves it on 127.0.0.1");
    CHECK(map_error(".:53 {\n}\n.:53 {\n bind ::1\n}\n") ==
          "Corefile:3: zone \".:53\" on ::1 overlaps the block at line 1, which serves it on "
          "every address (no bind)");
    CHECK(map_error("a.org:53 b.org:54 {\n}\n") ==
          "Corefile:1: the zones of a server block must share one port (53 and 54)");
}

TEST_CASE("corefile config: plugins that read every line may repeat in a block, as CoreDNS's") {
    auto config = map_ok(
        ".:53 {\n rewrite name a.example b.example\n rewrite name c.example d.example\n"
        " bind 127.0.0.1\n bind 127.0.0.2\n kubernetes cluster.local\n}\n");
    REQUIRE(config.servers.size() == 1);
    CHECK(config.servers[0].bind.size() == 2);
    // The unsupported plugin is warned once, at its first line.
    REQUIRE(config.warnings.size() == 1);
    CHECK(config.warnings[0] ==
          "Corefile:2: plugin \"rewrite\" is not supported; the server runs without it");
}

TEST_CASE("corefile apply: kubeadm's Corefile sets DnsOptions") {
    DnsOptions options;
    options.cluster_domain = "cluster.local";
    options.ttl = 99;
    options.pods = PodRecords::kDisabled;
    options.upstreams = {hp("9.9.9.9")};
    options.listen = {hp("127.0.0.1:5300"), hp("[::1]:5300")};
    auto warnings = apply_corefile(kKubeadmCorefile, "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(warnings->empty());
    CHECK(options.cluster_domain == "cluster.local");
    CHECK(options.ttl == 30);
    CHECK(options.pods == PodRecords::kInsecure);
    CHECK(options.upstreams.empty());
    CHECK(options.resolv_conf == SWITCHBOARD_TEST_DATA "/resolv.conf");
    // --dns-listen's addresses, the block's port.
    CHECK(options.listen == std::vector<HostPort>{hp("127.0.0.1:53"), hp("[::1]:53")});
}

TEST_CASE("corefile apply: the Corefile's domain, bind, port and forward win") {
    DnsOptions options;
    options.listen = {hp("127.0.0.1:5300")};
    auto warnings = apply_corefile(
        "consul.local {\n forward . 10.0.0.5\n}\n"
        "{$DOMAIN}:5353 {\n bind 127.0.0.2 ::1\n kubernetes Example.Test in-addr.arpa\n"
        " forward . 10.0.0.1 [fd00::1]:5353\n}\n",
        "Corefile",
        [](const std::string& name) -> std::optional<std::string> {
            if (name == "DOMAIN") return "example.test";
            return std::nullopt;
        },
        options);
    REQUIRE(warnings.ok());
    CHECK(*warnings ==
          std::vector<std::string>{"Corefile:6: the cluster domain is example.test, not "
                                   "cluster.local (--cluster-domain): the Corefile wins",
                                   "Corefile:1: server block on port 53 is not served: "
                                   "switchboard answers only the kubernetes block's port 5353"});
    CHECK(options.stubs.empty());
    CHECK(options.cluster_domain == "example.test");
    CHECK(options.ttl == 5);
    CHECK(options.pods == PodRecords::kDisabled);
    CHECK(options.upstreams == std::vector<HostPort>{hp("10.0.0.1"), hp("[fd00::1]:5353")});
    CHECK(options.listen == std::vector<HostPort>{hp("127.0.0.2:5353"), hp("[::1]:5353")});
}

TEST_CASE("corefile apply: other server blocks on the port are stub domains") {
    DnsOptions options;
    options.listen = {hp("127.0.0.1:5300")};
    options.upstreams = {hp("9.9.9.9")};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local in-addr.arpa\n forward . 10.0.0.1\n}\n"
        "Consul.Local dc1.consul.local {\n errors\n cache 30\n forward . 10.0.0.5 "
        "10.0.0.6:8600\n}\n"
        "corp.example:53 {\n forward corp.example 10.0.0.7\n}\n"
        "10.in-addr.arpa {\n forward . 10.0.0.8\n}\n"
        "svc.cluster.local {\n forward . 10.0.0.9\n}\n"
        "hosts.example {\n errors\n}\n"
        "other.example:5353 {\n forward . 10.0.0.10\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(*warnings == std::vector<std::string>{
                           "Corefile:16: zone svc.cluster.local. is inside the cluster zone, "
                           "which is answered from the cluster; block ignored for it",
                           "Corefile:19: zone hosts.example. has no forward: its names go to "
                           "the kubernetes block's upstreams",
                           "Corefile:22: server block on port 5353 is not served: switchboard "
                           "answers only the kubernetes block's port 53"});
    auto wire = [](const char* text) { return *name_from_text(text); };
    std::vector<HostPort> consul = {hp("10.0.0.5"), hp("10.0.0.6:8600")};
    REQUIRE(options.stubs.size() == 4);
    CHECK(options.stubs[0].zone == wire("consul.local"));
    CHECK(options.stubs[0].upstreams == consul);
    CHECK(options.stubs[1].zone == wire("dc1.consul.local"));
    CHECK(options.stubs[1].upstreams == consul);
    CHECK(options.stubs[2].zone == wire("corp.example"));
    CHECK(options.stubs[2].upstreams == std::vector<HostPort>{hp("10.0.0.7")});
    CHECK(options.stubs[3].zone == wire("10.in-addr.arpa"));
    CHECK(options.stubs[3].upstreams == std::vector<HostPort>{hp("10.0.0.8")});
    CHECK(options.upstreams == std::vector<HostPort>{hp("10.0.0.1")});
}

TEST_CASE("corefile apply: a forward to several files and addresses reads the files") {
    char path[] = "/tmp/sb-corefile-resolv.XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    {
        std::ofstream file(path);
        file << "search example.org\nnameserver 192.0.2.1\nnameserver 2001:db8::1\n";
    }
    DnsOptions options;
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1 " + std::string(path) + "\n}\n",
        "Corefile", nullptr, options);
    std::remove(path);
    REQUIRE(warnings.ok());
    CHECK(options.upstreams ==
          std::vector<HostPort>{hp("10.0.0.1"), hp("192.0.2.1"), hp("[2001:db8::1]:53")});
}

TEST_CASE("corefile apply: without bind or --dns-listen DNS stays off, said once") {
    DnsOptions options;
    options.upstreams = {hp("9.9.9.9")};
    auto warnings =
        apply_corefile(".:53 {\n kubernetes cluster.local\n}\n", "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(*warnings == std::vector<std::string>{"Corefile:1: DNS stays off: the server block has "
                                                "no bind and --dns-listen is empty"});
    CHECK(options.listen.empty());
    // No `forward .`: the flags' upstreams stay.
    CHECK(options.upstreams == std::vector<HostPort>{hp("9.9.9.9")});
}

TEST_CASE("corefile apply: errors") {
    DnsOptions options;
    auto error = [&](std::string_view text) {
        auto result = apply_corefile(text, "/etc/coredns/Corefile", nullptr, options);
        REQUIRE_FALSE(result.ok());
        return result.error().message;
    };
    CHECK(error(".:53 {\n forward . 1.1.1.1\n}\n") ==
          "/etc/coredns/Corefile:1: no server block has the kubernetes plugin; switchboard needs "
          "it for the cluster zone");
    CHECK(error("a.org {\n kubernetes\n}\nb.org {\n kubernetes\n}\n") ==
          "/etc/coredns/Corefile:5: kubernetes is already configured at line 2; switchboard "
          "serves one cluster zone");
    CHECK(error(".:53 {\n kubernetes in-addr.arpa\n}\n") ==
          "/etc/coredns/Corefile:2: kubernetes needs the cluster domain (e.g. cluster.local) as "
          "a zone");
    CHECK(error(".:53 {\n kubernetes\n}\n") ==
          "/etc/coredns/Corefile:2: kubernetes needs the cluster domain (e.g. cluster.local) as "
          "a zone");
    CHECK(error(".:53 {\n import x\n}\n") ==
          "/etc/coredns/Corefile:2: import is not supported: paste the imported file's content "
          "into the Corefile");
}

TEST_CASE("corefile config: timeouts, CoreDNS's syntax and range") {
    ServerConfig server =
        block_ok("timeouts {\n read 5s\n idle 1m\n write 20s\n maxtcpqueries -1\n}");
    REQUIRE(server.timeouts);
    CHECK(server.timeouts->read == milliseconds(5000));
    CHECK(server.timeouts->idle == milliseconds(60000));
    auto config =
        map_ok(".:53 {\n timeouts {\n  idle 30s\n  write 5s\n  maxtcpqueries 10\n }\n}\n");
    CHECK_FALSE(config.servers[0].timeouts->read);
    CHECK(config.warnings ==
          std::vector<std::string>{
              "Corefile:4: timeouts: write is not supported; a client that stops reading is "
              "closed by the idle timeout",
              "Corefile:5: timeouts: maxtcpqueries is not supported; a TCP connection serves "
              "any number of queries"});
    CHECK(block_error("timeouts {\n read 500ms\n}") ==
          "Corefile:3: timeouts: read must be between 1s and 24h");
    CHECK(block_error("timeouts {\n idle 25h\n}") ==
          "Corefile:3: timeouts: idle must be between 1s and 24h");
    CHECK(block_error("timeouts {\n linger 5s\n}") ==
          "Corefile:3: timeouts: unknown option \"linger\"");
    CHECK(block_error("timeouts {\n maxtcpqueries 0\n}") ==
          "Corefile:3: timeouts: maxtcpqueries must be -1 (unlimited) or positive");
    CHECK(block_error("timeouts {\n}") ==
          "Corefile:2: timeouts: a timeouts block with no timeouts");
    CHECK(block_error("timeouts 5s") == "Corefile:2: timeouts: wrong argument count (1, wants 0)");
}

TEST_CASE("corefile apply: the kubernetes block's timeouts set the TCP timeouts") {
    DnsOptions options;
    options.listen = {hp("127.0.0.1:5300")};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n timeouts {\n  read 2s\n  idle 30s\n }\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(options.tcp_read_timeout == milliseconds(2000));
    CHECK(options.tcp_idle_timeout == milliseconds(30000));
    DnsOptions defaults;
    defaults.listen = {hp("127.0.0.1:5300")};
    REQUIRE(apply_corefile(".:53 {\n kubernetes cluster.local\n}\n", "Corefile", nullptr, defaults)
                .ok());
    CHECK(defaults.tcp_read_timeout == kTcpReadTimeout);
    CHECK(defaults.tcp_idle_timeout == kTcpIdleTimeout);
}

TEST_CASE("corefile config: autopath @kubernetes turns the search path on, other forms warn") {
    CHECK(block_ok("autopath @kubernetes\nkubernetes cluster.local").autopath);
    CHECK_FALSE(block_ok("kubernetes cluster.local").autopath);
    auto file = map_ok(".:53 {\n autopath /etc/resolv.conf\n kubernetes cluster.local\n}\n");
    CHECK_FALSE(file.servers[0].autopath);
    CHECK(file.warnings == std::vector<std::string>{
                               "Corefile:2: autopath \"/etc/resolv.conf\" is not supported (only "
                               "`autopath @kubernetes`); the server runs without it"});
    auto zones = map_ok(".:53 {\n autopath cluster.local @kubernetes\n}\n");
    CHECK_FALSE(zones.servers[0].autopath);
    CHECK(zones.warnings == std::vector<std::string>{
                                "Corefile:2: autopath \"@kubernetes\" with zones is not supported "
                                "(only `autopath @kubernetes`); the server runs without it"});
    CHECK(block_error("autopath") ==
          "Corefile:2: autopath: wrong argument count (0, wants at "
          "least 1)");
    CHECK(block_error("autopath @kubernetes {\n}") == "Corefile:2: autopath takes no { } block");
}

TEST_CASE("corefile options: autopath is the kubernetes block's, and the Corefile wins") {
    const std::string with = ".:53 {\n autopath @kubernetes\n kubernetes cluster.local\n}\n";
    const std::string without = ".:53 {\n kubernetes cluster.local\n}\n";
    DnsOptions options;
    REQUIRE(apply_corefile(with, "Corefile", nullptr, options).ok());
    CHECK(options.autopath);

    // --dns-autopath with a Corefile that has none: off, and said.
    DnsOptions flagged;
    flagged.autopath = true;
    auto warnings = apply_corefile(without, "Corefile", nullptr, flagged);
    REQUIRE(warnings.ok());
    CHECK_FALSE(flagged.autopath);
    REQUIRE_FALSE(warnings->empty());
    CHECK(warnings->front() ==
          "Corefile:1: the kubernetes block has no `autopath @kubernetes`: --dns-autopath is off "
          "(the Corefile wins)");

    // In a stub block it does nothing.
    DnsOptions stub;
    auto stub_warnings = apply_corefile(
        without + "example.org:53 {\n autopath @kubernetes\n forward . 10.0.0.1\n}\n", "Corefile",
        nullptr, stub);
    REQUIRE(stub_warnings.ok());
    CHECK_FALSE(stub.autopath);
    CHECK(std::find(stub_warnings->begin(), stub_warnings->end(),
                    "Corefile:4: autopath is served only in the kubernetes block; ignored here") !=
          stub_warnings->end());
}

TEST_CASE("corefile config: one zone on different addresses, or on other ports, is no overlap") {
    auto config = map_ok(
        ".:53 {\n bind 127.0.0.1\n}\n.:53 {\n bind 127.0.0.2\n}\n.:5353 {\n}\n"
        "example.org:53 {\n}\n");
    CHECK(config.servers.size() == 4);
}

TEST_CASE("corefile config: what CoreDNS accepts in errors, health_check and hosts") {
    auto errors = map_ok(
        ".:53 {\nerrors stdout\n}\n"
        "example.org:53 {\nerrors {\n consolidate 5m \".* i/o timeout$\" warning\n"
        " consolidate 30s \"^Failed to .+\"\n stacktrace\n}\n}\n");
    REQUIRE(errors.servers.size() == 2);
    CHECK(errors.servers[0].errors);
    CHECK(errors.servers[1].errors);
    // consolidate shapes only the log: warned about once, not acted on.
    CHECK(errors.warnings ==
          std::vector<std::string>{
              "Corefile:6: errors: consolidate is not acted on; each error is logged"});
    auto forward = block_ok("forward . 1.1.1.1 {\n health_check 5s no_rec domain example.org\n}");
    REQUIRE(forward.forwards.size() == 1);
    CHECK(forward.forwards[0].health_check == std::chrono::seconds(5));
    auto hosts = block_ok("hosts {\n 10.0.0.1 a.example\n fallthrough\n ttl 60\n}");
    REQUIRE(hosts.hosts.has_value());
    CHECK(hosts.hosts->inline_entries.size() == 1);
    CHECK(hosts.hosts->ttl == 60);
}

TEST_CASE("corefile config: what CoreDNS 1.14 accepts in reload, timeouts, bind, cache, ready") {
    // reload: a zero jitter is none (CoreDNS: 0 or at least 1s).
    auto reload = block_ok("reload 2s 0s");
    REQUIRE(reload.reload.has_value());
    CHECK(reload.reload->interval == std::chrono::seconds(2));
    CHECK(reload.reload->jitter == milliseconds(0));
    // timeouts: a bare number is seconds (durations.NewDurationFromArg).
    auto timeouts = block_ok("timeouts {\n read 10\n idle 60\n}");
    REQUIRE(timeouts.timeouts.has_value());
    CHECK(timeouts.timeouts->read == std::chrono::seconds(10));
    CHECK(timeouts.timeouts->idle == std::chrono::seconds(60));
    // bind's except block removes its addresses.
    auto bind = block_ok("bind 127.0.0.1 ::1 {\n except ::1\n}");
    CHECK(bind.bind == std::vector<IpAddress>{*IpAddress::parse("127.0.0.1")});
    // serve_stale's longer forms at their defaults; the mode in any case.
    auto stale = block_ok("cache {\n serve_stale 30m VERIFY 0 0 0\n}");
    REQUIRE(stale.cache.has_value());
    CHECK(stale.cache->serve_stale == std::chrono::minutes(30));
    CHECK(stale.cache->serve_stale_verify);
    auto immediate = block_ok("cache {\n serve_stale 1h immediate 0s 0s\n}");
    CHECK_FALSE(immediate.cache->serve_stale_verify);
    // ready's monitor, prometheus's runtime_metrics (warned).
    CHECK(block_ok("ready :8181 {\n monitor continuously\n}").ready == HttpListen{"", 8181});
    auto metrics = map_ok(".:53 {\nprometheus :9153 {\n runtime_metrics\n}\n}\n");
    CHECK(metrics.servers[0].prometheus == HttpListen{"", 9153});
    CHECK(metrics.warnings ==
          std::vector<std::string>{"Corefile:3: prometheus: runtime_metrics (Go runtime metrics) "
                                   "has no equivalent; ignored"});
}

TEST_CASE("corefile apply: hosts' fallthrough_unsupported reaches the hosts table's options") {
    DnsOptions options;
    options.listen = {hp("127.0.0.1:53")};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n hosts {\n  10.0.0.1 a.example\n  fallthrough\n"
        "  fallthrough_unsupported\n }\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    REQUIRE(options.hosts.has_value());
    CHECK(options.hosts->fallthrough_unsupported);
    CHECK(options.hosts->fallthrough.has_value());
}
