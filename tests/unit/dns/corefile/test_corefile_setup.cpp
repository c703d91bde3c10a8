// CoreDNS's own setup tests as the specification of what a Corefile may say:
// the inputs and verdicts of plugin/<name>/setup_test.go for every plugin
// switchboard maps but forward (tests/unit/dns/corefile/test_forward_corefile.cpp),
// and of core/dnsserver's server block, listener and zone overlap tests,
// transcribed as data (CoreDNS 1.14.7). Each input goes through the path
// `switchboard plan --dns-corefile` takes (parse_corefile, map_corefile).
//
// A row where switchboard's verdict is not CoreDNS's names the reason, a
// phrase that docs/corefile.md must hold (its "Differences from CoreDNS" or
// the plugin's option table), so a difference is never silent.
#include <catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dns/corefile/config.h"

using namespace sb;
using namespace sb::dns;

namespace {

enum class CoreDns { kAccepts, kRefuses };
// kWarns: accepted with at least one warning (an option not acted on).
enum class Here { kAccepts, kWarns, kRefuses };

struct SetupCase {
    std::string_view input;  // a setup_test.go input: directives, or whole server blocks
    CoreDns coredns;
    Here here;
    std::string_view difference = {};  // why `here` is not `coredns`: a phrase of the docs
};

constexpr auto A = CoreDns::kAccepts;
constexpr auto R = CoreDns::kRefuses;
constexpr auto ok = Here::kAccepts;
constexpr auto warns = Here::kWarns;
constexpr auto refused = Here::kRefuses;

std::string read_docs() {
    std::ifstream file(SWITCHBOARD_SOURCE_ROOT "/docs/corefile.md");
    REQUIRE(file.good());
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// What switchboard says of `corefile`: refused, warned or accepted.
Here verdict_of(const std::string& corefile, std::string& detail) {
    auto parsed = parse_corefile(corefile, "Corefile", nullptr);
    if (!parsed) {
        detail = parsed.error().message;
        return Here::kRefuses;
    }
    auto config = map_corefile(*parsed, "Corefile");
    if (!config) {
        detail = config.error().message;
        return Here::kRefuses;
    }
    if (config->warnings.empty()) return Here::kAccepts;
    detail = config->warnings.front();
    return Here::kWarns;
}

// Runs each case; `wrap` puts a plugin's input in a `.:53` server block, as
// CoreDNS's test controller hands it to the plugin's setup.
void run(std::string_view plugin, const std::vector<SetupCase>& cases, bool wrap = true) {
    static const std::string docs = read_docs();
    for (const auto& c : cases) {
        const std::string corefile =
            wrap ? ".:53 {\n" + std::string(c.input) + "\n}\n" : std::string(c.input);
        std::string detail;
        const Here here = verdict_of(corefile, detail);
        INFO(plugin << ": " << corefile << "-> " << detail);
        CHECK(here == c.here);
        const bool same = (c.here == Here::kRefuses) == (c.coredns == CoreDns::kRefuses);
        if (same) {
            CHECK(c.difference.empty());
        } else {
            // A difference is named, and docs/corefile.md says it.
            REQUIRE_FALSE(c.difference.empty());
            CHECK(docs.find(c.difference) != std::string::npos);
        }
    }
}

}  // namespace

TEST_CASE("coredns setup tests: kubernetes (plugin/kubernetes/setup_test.go)") {
    run("kubernetes",
        {
            {"kubernetes coredns.local", A, ok},
            {"kubernetes coredns.local test.local", A, ok},
            {"kubernetes coredns.local {\n}", A, ok},
            {"kubernetes coredns.local {\nendpoint http://localhost:9090 http://localhost:9091\n}",
             A, warns},
            {"kubernetes coredns.local {\nnamespaces demo\n}", A, warns},
            {"kubernetes coredns.local {\nnamespaces demo test\n}", A, warns},
            {"kubernetes coredns.local {\n labels environment=prod\n}", A, warns},
            {"kubernetes coredns.local {\n labels environment in (production, staging, "
             "qa),application=nginx\n}",
             A, warns},
            {"kubernetes coredns.local {\n namespace_labels istio-injection=enabled\n}", A, warns},
            {"kubernetes coredns.local {\n namespaces foo bar\n namespace_labels "
             "istio-injection=enabled\n}",
             R, refused},
            {"kubernetes coredns.local test.local {\nendpoint http://localhost:8080\nnamespaces "
             "demo test\n labels environment in (production, staging, qa),application=nginx\n "
             "fallthrough\n}",
             A, warns},
            {"kubernetes coredns.local {\n endpoint\n}", R, refused},
            {"kubernetes coredns.local {\nnamespaces\n}", R, refused},
            {"kubernetes coredns.local {\n labels\n}", R, refused},
            {"kubernetes coredns.local {\n labels environment in (production, qa\n}", R, warns,
             "Label selectors are not parsed"},
            {"kubernetes coredns.local {\npods disabled\n}", A, ok},
            {"kubernetes coredns.local {\npods insecure\n}", A, ok},
            {"kubernetes coredns.local {\npods verified\n}", A, ok},
            {"kubernetes coredns.local {\npods giant_seed\n}", R, refused},
            {"kubernetes coredns.local {\nfallthrough ip6.arpa inaddr.arpa foo.com\n}", A, ok},
            {"kubernetes coredns.local\nkubernetes cluster.local", R, refused},
            {"kubernetes coredns.local {\nkubeconfig\n}", R, refused},
            {"kubernetes coredns.local {\nkubeconfig file context extraarg\n}", R, refused},
            {"kubernetes coredns.local {\nkubeconfig file\n}", A, warns},
            {"kubernetes coredns.local {\nkubeconfig file context\n}", A, warns},
            {"kubernetes coredns.local {\nkubeconfig file context\nstartup_timeout 1s\n}", A,
             warns},
            // TestKubernetesParseEndpointPodNames, ...NoEndpoints, ...IgnoreEmptyService
            {"kubernetes coredns.local {\nendpoint_pod_names\n}", A, ok},
            {"kubernetes coredns.local {\nendpoint_pod_names giant_seed\n}", R, refused},
            {"kubernetes coredns.local {\n}", A, ok},
            {"kubernetes coredns.local {\nnoendpoints\n}", A, ok},
            {"kubernetes coredns.local {\nnoendpoints ixnay on the endpointsay\n}", R, refused},
            {"kubernetes coredns.local {\nignore empty_service\n}", A, warns},
            {"kubernetes coredns.local {\nignore ixnay on the endpointsay\n}", R, refused},
            {"kubernetes coredns.local {\nignore empty_service ixnay on the endpointsay\n}", A,
             warns},
            // TestKubernetesParseMulticluster
            {"kubernetes coredns.local clusterset.local {\nmulticluster clusterset.local\n}", A,
             warns},
            {"kubernetes coredns.local {\nmulticluster clusterset.local\n}", R, refused},
            {"kubernetes coredns.local clusterset.local {\nmulticluster clusterset.local "
             "test.local\n}",
             R, refused},
            {"kubernetes coredns.local {\nmulticluster\n}", A, warns},
            // TestKubernetesParseAPIRateLimiting
            {"kubernetes coredns.local {\napiserver_qps 50.0\napiserver_burst 100\n"
             "apiserver_max_inflight 25\n}",
             A, warns},
            {"kubernetes coredns.local {\napiserver_qps -10\n}", R, refused},
            {"kubernetes coredns.local {\napiserver_burst -5\n}", R, refused},
            {"kubernetes coredns.local {\napiserver_max_inflight -1\n}", R, refused},
            // TestKubernetesParseZonal: validated, then refused (not served here).
            {"kubernetes coredns.local {\nzonal\n}", A, refused, "`zonal`"},
            {"kubernetes coredns.local {\nzonal us-west-2a\n}", R, refused},
            {"kubernetes coredns.local {\nzonal\nnoendpoints\n}", R, refused},
            // setup_ttl_test.go
            {"kubernetes cluster.local {\nttl 56\n}", A, ok},
            {"kubernetes cluster.local", A, ok},
            {"kubernetes cluster.local {\nttl -1\n}", R, refused},
            {"kubernetes cluster.local {\nttl 3601\n}", R, refused},
        });
}

TEST_CASE("coredns setup tests: cache (plugin/cache/setup_test.go)") {
    run("cache", {
                     {"cache", A, ok},
                     {"cache example.nl {\nsuccess 10\n}", A, ok},
                     {"cache example.nl {\nsuccess 10 1800 30\n}", A, ok},
                     {"cache example.nl {\nsuccess 10\ndenial 10 15\n}", A, ok},
                     {"cache example.nl {\nsuccess 10\ndenial 10 15 2\n}", A, ok},
                     {"cache 25 example.nl {\nsuccess 10\ndenial 10 15\n}", A, ok},
                     {"cache 25 example.nl {\nsuccess 10\ndenial 10 15 5\n}", A, ok},
                     {"cache aaa example.nl", A, ok},
                     {"cache {\nprefetch 10\n}", A, warns},
                     {"cache example.nl {\nsuccess\ndenial 10 15\n}", R, refused},
                     {"cache example.nl {\nsuccess 15\ndenial aaa\n}", R, refused},
                     {"cache example.nl {\npositive 15\nnegative aaa\n}", R, refused},
                     {"cache 0 example.nl", R, refused},
                     {"cache -1 example.nl", R, refused},
                     {"cache 1 example.nl {\npositive 0\n}", R, refused},
                     {"cache 1 example.nl {\npositive 0\nprefetch -1\n}", R, refused},
                     {"cache 1 example.nl {\nprefetch 0 blurp\n}", R, refused},
                     {"cache\ncache", R, refused},
                 });
}

TEST_CASE("coredns setup tests: cache serve_stale and serve_stale_policy") {
    // TestServeStale, TestServeStaleFailureRecheck, TestServeStalePolicy:
    // the inputs sit in `cache { ... }`. A VERIFY_TIMEOUT, RESPONSE_TTL or
    // FAILURE_RECHECK other than 0, and prefer_positive, are refused here.
    const std::vector<std::pair<std::string_view, SetupCase>> rows = {
        {"serve_stale", {{}, A, ok}},
        {"serve_stale 20m", {{}, A, ok}},
        {"serve_stale 1h20m", {{}, A, ok}},
        {"serve_stale 0m", {{}, A, ok}},
        {"serve_stale 0", {{}, A, ok}},
        {"serve_stale 0 verify", {{}, A, ok}},
        {"serve_stale 0 immediate", {{}, A, ok}},
        {"serve_stale 0 VERIFY", {{}, A, ok}},
        {"serve_stale 1h immediate 30s", {{}, A, refused, "RESPONSE_TTL"}},
        {"serve_stale 1h immediate 30s 30s", {{}, A, refused, "RESPONSE_TTL"}},
        {"serve_stale 1h immediate 4294967295s", {{}, A, refused, "RESPONSE_TTL"}},
        {"serve_stale 1h immediate 0", {{}, A, ok}},
        {"serve_stale 1h verify 100ms", {{}, A, refused, "VERIFY_TIMEOUT"}},
        {"serve_stale 1h verify 100ms 30s", {{}, A, refused, "VERIFY_TIMEOUT"}},
        {"serve_stale 1h verify 100ms 30s 30s", {{}, A, refused, "VERIFY_TIMEOUT"}},
        {"serve_stale 1h verify 0", {{}, A, ok}},
        {"serve_stale 1h verify 0 1m", {{}, A, refused, "RESPONSE_TTL"}},
        {"serve_stale 1h VERIFY 250ms", {{}, A, refused, "VERIFY_TIMEOUT"}},
        {"serve_stale 20", {{}, R, refused}},
        {"serve_stale -20m", {{}, R, refused}},
        {"serve_stale aa", {{}, R, refused}},
        {"serve_stale 1m nono", {{}, R, refused}},
        {"serve_stale 0 after nono", {{}, R, refused}},
        {"serve_stale 1h immediate 100ms", {{}, R, refused}},
        {"serve_stale 1h immediate 4294967296s", {{}, R, refused}},
        {"serve_stale 1h immediate -1s", {{}, R, refused}},
        {"serve_stale 1h immediate garbage", {{}, R, refused}},
        {"serve_stale 1h immediate 30s extra", {{}, R, refused}},
        {"serve_stale 1h verify -1ms", {{}, R, refused}},
        {"serve_stale 1h verify garbage", {{}, R, refused}},
        {"serve_stale 1h verify 100ms 500ms", {{}, R, refused}},
        {"serve_stale 1h verify 100ms -1s", {{}, R, refused}},
        {"serve_stale 1h verify 100ms garbage", {{}, R, refused}},
        {"serve_stale 1h verify 100ms 30s extra", {{}, R, refused}},
        {"serve_stale 1h immediate 0 0", {{}, A, ok}},
        {"serve_stale 1h verify 100ms 30s 250ms", {{}, A, refused, "VERIFY_TIMEOUT"}},
        {"serve_stale 1h verify 0 0 5m", {{}, A, refused, "FAILURE_RECHECK"}},
        {"serve_stale 1h immediate 30s -1s", {{}, R, refused}},
        {"serve_stale 1h immediate 30s 5m1s", {{}, R, refused}},
        {"serve_stale 1h immediate 30s invalid", {{}, R, refused}},
        {"serve_stale 1h immediate 30s 30s extra", {{}, R, refused}},
        {"serve_stale 1h verify 100ms 30s -1s", {{}, R, refused}},
        {"serve_stale 1h verify 100ms 30s 30s extra", {{}, R, refused}},
        {"serve_stale\nserve_stale_policy prefer_positive",
         {{}, A, refused, "`serve_stale_policy"}},
        {"serve_stale_policy PREFER_POSITIVE\nserve_stale",
         {{}, A, refused, "`serve_stale_policy"}},
        {"serve_stale_policy prefer_positive", {{}, R, refused}},
        {"serve_stale\nserve_stale_policy", {{}, R, refused}},
        {"serve_stale\nserve_stale_policy prefer_positive extra", {{}, R, refused}},
        {"serve_stale\nserve_stale_policy invalid", {{}, R, refused}},
        {"serve_stale\nserve_stale_policy prefer_positive\nserve_stale_policy prefer_positive",
         {{}, R, refused}},
        // TestServfail, TestDisable, TestKeepttl
        {"servfail 1s", {{}, A, warns}},
        {"servfail 5m", {{}, A, warns}},
        {"servfail 0s", {{}, A, warns}},
        {"servfail 0", {{}, A, warns}},
        {"servfail", {{}, R, refused}},
        {"servfail 6m", {{}, R, refused}},
        {"servfail 20", {{}, R, refused}},
        {"servfail -1s", {{}, R, refused}},
        {"servfail aa", {{}, R, refused}},
        {"servfail 1m invalid", {{}, R, refused}},
        {"disable denial example.com example.org", {{}, A, ok}},
        {"disable success example.com example.org", {{}, A, ok}},
        {"disable denial", {{}, A, ok}},
        {"disable success", {{}, A, ok}},
        {"disable denial example.com example.org\ndisable success example.com example.org",
         {{}, A, ok}},
        {"disable invalid example.com example.org", {{}, R, refused}},
        {"keepttl", {{}, A, warns}},
        {"keepttl arg1", {{}, R, refused}},
    };
    std::vector<std::string> inputs;
    for (const auto& row : rows) inputs.push_back("cache {\n" + std::string(row.first) + "\n}");
    std::vector<SetupCase> cases;
    for (size_t i = 0; i < rows.size(); ++i) {
        cases.push_back(rows[i].second);
        cases.back().input = inputs[i];
    }
    run("cache", cases);
}

TEST_CASE("coredns setup tests: hosts (plugin/hosts/setup_test.go)") {
    run("hosts",
        {
            {"hosts\n", A, ok},
            {"hosts /tmp", A, ok},
            {"hosts /etc/hosts miek.nl.", A, ok},
            {"hosts /etc/hosts miek.nl. pun.gent.", A, ok},
            {"hosts {\nfallthrough\n}", A, ok},
            {"hosts /tmp {\nfallthrough\n}", A, ok},
            {"hosts /etc/hosts miek.nl. {\nfallthrough\n}", A, ok},
            {"hosts /etc/hosts miek.nl 10.0.0.9/8 {\nfallthrough\n}", A, ok},
            {"hosts /etc/hosts {\nfallthrough\n}\nhosts /etc/hosts {\nfallthrough\n}", R, refused},
            // TestHostsInlineParse
            {"hosts highly_unlikely_to_exist_hosts_file example.org {\n10.0.0.1 example.org\n"
             "fallthrough\n}",
             A, ok},
            {"hosts highly_unlikely_to_exist_hosts_file example.org {\n10.0.0.1 example.org\n}", A,
             ok},
            {"hosts highly_unlikely_to_exist_hosts_file example.org {\nfallthrough\n10.0.0.1 "
             "example.org\n}",
             R, refused},
            // TestHostsParseFallthroughUnsupported
            {"hosts {\nfallthrough\nfallthrough_unsupported\n}", A, ok},
            {"hosts {\nfallthrough_unsupported\nfallthrough example.org\n}", A, ok},
            {"hosts {\nfallthrough_unsupported\n}", R, refused},
            {"hosts {\nfallthrough\nfallthrough_unsupported example.org\n}", R, refused},
            // The options' checks (setup.go): ttl 1-65535, reload a Go duration >= 0.
            {"hosts {\nttl 0\n}", R, refused},
            {"hosts {\nttl 65535\n}", A, ok},
            {"hosts {\nreload 0\n}", A, ok},
            {"hosts {\nreload -1s\n}", R, refused},
            // An inline line that is not `IP NAME...`: CoreDNS keeps it as a
            // hosts line and its parser skips it; switchboard refuses it.
            {"hosts {\nnodes here\n}", A, refused, "an inline line that is not `IP NAME"},
        });
}

TEST_CASE("coredns setup tests: errors (plugin/errors/setup_test.go)") {
    static const std::string large_regex =
        "errors {\nconsolidate 1m " + std::string(10001, 'a') + "\n}";
    run("errors", {
                      {"errors", A, ok},
                      {"errors stdout", A, ok},
                      {"errors errors.txt", R, refused},
                      {"errors visible", R, refused},
                      {"errors {\nlog visible\n}", R, refused},
                      {"errors\nerrors ", R, refused},
                      {"errors a b", R, refused},
                      {"errors {\nconsolidate\n}", R, refused},
                      {"errors {\nconsolidate 1m\n}", R, refused},
                      {"errors {\nconsolidate 1m .* extra\n}", R, refused},
                      {"errors {\nconsolidate abc .*\n}", R, refused},
                      {"errors {\nconsolidate 1 .*\n}", R, refused},
                      {"errors {\nconsolidate 1m ())\n}", R, warns, "REGEXP is not compiled"},
                      {"errors {\nstacktrace\n}", A, ok},
                      {"errors {\nstacktrace\nconsolidate 1m ^exact$\n}", A, warns},
                      {"errors {\nconsolidate 1m ^exact$\n}", A, warns},
                      {"errors {\nconsolidate 1m error\n}", A, warns},
                      {"errors {\nconsolidate 1m \"format error\"\n}", A, warns},
                      {"errors {\nconsolidate 1m error1\nconsolidate 5s error2\n}", A, warns},
                      {"errors {\nconsolidate 1m error show_first\n}", A, warns},
                      {"errors {\nconsolidate 1m error warning show_first\n}", A, warns},
                      {"errors {\nconsolidate 1m error invalid_option\n}", R, refused},
                      {"errors {\nconsolidate 1m error warning error\n}", R, refused},
                      {"errors {\nconsolidate 1m error info debug\n}", R, refused},
                      {"errors {\nconsolidate 1m error show_first warning\n}", R, refused},
                      {"errors {\nconsolidate 1m error show_first info\n}", R, refused},
                      // Go compiles an empty REGEXP; TestErrorsParseLargeRegex.
                      {"errors {\nconsolidate 1m \"\"\n}", A, warns},
                      {large_regex, R, refused},
                  });
}

TEST_CASE("coredns setup tests: log (plugin/log/setup_test.go)") {
    run("log", {
                   {"log", A, ok},
                   {"log example.org", A, ok},
                   {"log example.org. {common}", A, ok},
                   {"log example.org {combined}", A, ok},
                   {"log example.org.\nlog example.net {combined}", A, ok},
                   {"log example.org {host}\nlog example.org {when}", A, ok},
                   {"log example.org example.net", A, ok},
                   {"log example.org example.net {host}", A, ok},
                   {"log example.org example.net {when} {\nclass denial\n}", A, ok},
                   {"log example.org {\nclass all\n}", A, ok},
                   {"log example.org {\nclass denial\n}", A, ok},
                   {"log {\nclass denial\n}", A, ok},
                   {"log {\nclass denial error\n}", A, ok},
                   {"log {\nclass denial\nclass error\n}", A, ok},
                   {"log {\nclass abracadabra\n}", R, refused},
                   {"log {\nclass\n}", R, refused},
                   {"log {\nunknown\n}", R, refused},
                   {"log example.org \"{combined} {/forward/upstream}\"", A, ok},
                   {"log example.org \"{common} {/forward/upstream}\"", A, ok},
                   {"log example.org \"{when} {combined} {/forward/upstream}\"", A, ok},
                   {"log example.org \"{when} {common} {/forward/upstream}\"", A, ok},
               });
}

TEST_CASE("coredns setup tests: health, ready, prometheus") {
    run("health", {
                      {"health", A, ok},
                      {"health localhost:1234", A, ok},
                      {"health localhost:1234 {\nlameduck 4s\n}", A, ok},
                      {"health bla:a", A, refused, "a host name or a named port"},
                      {"health bla", R, refused},
                      {"health bla bla", R, refused},
                      {"health localhost:1234 {\nlameduck a\n}", R, refused},
                      {"health localhost:1234 {\nlamedudk 4\n}", R, refused},
                  });
    run("ready", {
                     {"ready", A, ok},
                     {"ready localhost:1234", A, ok},
                     {"ready {\nmonitor until-ready\n}", A, ok},
                     {"ready {\nmonitor continuously\n}", A, ok},
                     {"ready localhost:1234 {\nmonitor continuously\n}", A, ok},
                     {"ready localhost:1234 {\nmonitor 404\n}", R, refused},
                     {"ready {\nmonitro continuously\n}", R, refused},
                     {"ready localhost:1234 b", R, refused},
                     {"ready bla", R, refused},
                     {"ready bla bla", R, refused},
                 });
    run("prometheus", {
                          {"prometheus", A, ok},
                          {"prometheus localhost:53", A, ok},
                          {"prometheus {\nruntime_metrics\n}", A, warns},
                          {"prometheus localhost:53 {\nruntime_metrics\n}", A, warns},
                          {"prometheus {\nruntime_metrics extra_arg\n}", R, refused},
                          {"prometheus /foo", R, refused},
                          {"prometheus a b c", R, refused},
                      });
}

TEST_CASE("coredns setup tests: reload, bind, loop, loadbalance, autopath") {
    run("reload", {
                      {"reload", A, ok},
                      {"reload 10s", A, ok},
                      {"reload 10s 2s", A, ok},
                      {"reload 2s 0s", A, ok},
                      {"reload foo", R, refused},
                      {"reload 10s foo", R, refused},
                      {"reload 10s 5s foo", R, refused},
                      {"reload 1s", R, refused},
                      {"reload 0s", R, refused},
                      {"reload 3s 0.5s", R, refused},
                  });
    run("bind", {
                    {"bind 1.2.3.4", A, ok},
                    {"bind", R, refused},
                    {"bind 1.2.3.invalid", R, refused},
                    {"bind 1.2.3.4 ::5", A, ok},
                    {"bind ::1 1.2.3.4 ::5 127.9.9.0", A, ok},
                    {"bind ::1 1.2.3.4 ::5 127.9.9.0 noone", R, refused},
                    {"bind 1.2.3.4 lo", A, refused, "interface names"},
                    {"bind lo {\nexcept 127.0.0.1\n}", A, refused, "interface names"},
                    {"bind 127.0.0.1 ::1 {\nexcept 127.0.0.1\n}", A, ok},
                    {"bind 127.0.0.1 {\nexcept\n}", R, refused},
                    {"bind 127.0.0.1 {\nonly ::1\n}", R, refused},
                });
    run("loop", {{"loop", A, ok}, {"loop argument", R, refused}});
    run("loadbalance",
        {
            {"loadbalance", A, ok},
            {"loadbalance round_robin", A, ok},
            {"loadbalance weighted wfile", A, refused, "`loadbalance weighted"},
            {"loadbalance weighted wf {\nreload 10s\n}", A, refused, "`loadbalance weighted"},
            {"loadbalance weighted wf {\nreload 0s\n}", A, refused, "`loadbalance weighted"},
            {"loadbalance fleeb", R, refused},
            {"loadbalance round_robin a", R, refused},
            {"loadbalance weighted", R, refused},
            {"loadbalance weighted a b", R, refused},
            {"loadbalance weighted wfile {\nsusu\n}", R, refused},
            {"loadbalance weighted wfile {\nreload a\n}", R, refused},
            {"loadbalance weighted wfile {\nreload 30s  a\n}", R, refused},
        });
    run("autopath", {
                        {"autopath @kubernetes", A, ok},
                        {"autopath example.org @kubernetes", A, warns},
                        {"autopath 10.0.0.0/8 @kubernetes", A, warns},
                        {"autopath /etc/resolv.conf", A, warns},
                        {"autopath kubernetes", R, warns, "the file is not read"},
                        {"autopath", R, refused},
                        {"autopath \"\"", R, warns, "the file is not read"},
                    });
}

TEST_CASE("coredns setup tests: timeouts (plugin/timeouts/timeouts_test.go)") {
    run("timeouts", {
                        {"timeouts {\nread 30s\n}", A, ok},
                        {"timeouts {\nread 1m\nwrite 2m\n}", A, warns},
                        {" timeouts {\nidle 1h\n}", A, ok},
                        {"timeouts {\nread 10\nwrite 20\nidle 60\n}", A, warns},
                        {"timeouts {\nmaxtcpqueries 128\n}", A, warns},
                        {"timeouts {\nmaxtcpqueries -1\n}", A, warns},
                        {"timeouts {\nread 10s\nmaxtcpqueries 128\n}", A, warns},
                        {"timeouts", R, refused},
                        {"timeouts {\n}", R, refused},
                        {"timeouts {\nread 10s\ngiraffe 30s\n}", R, refused},
                        {"timeouts {\nread 10s 20s\nwrite 30s\n}", R, refused},
                        {"timeouts {\nwrite snake\n}", R, refused},
                        {"timeouts {\nidle 0s\n}", R, refused},
                        {"timeouts {\nread 48h\n}", R, refused},
                        {"timeouts {\nmaxtcpqueries 0\n}", R, refused},
                        {"timeouts {\nmaxtcpqueries -2\n}", R, refused},
                        {"timeouts {\nmaxtcpqueries snake\n}", R, refused},
                    });
}

TEST_CASE("coredns server tests: keys, listeners, zone overlap (core/dnsserver)") {
    run("server blocks",
        {
            // TestInspectServerBlocks (register_test.go)
            {"example.org {\n}\n", A, ok},
            {"EXAMPLE.ORG {\n}\n", A, ok},
            {"example.org:1053 {\n}\n", A, ok},
            {"tls://example.org {\n}\n", A, refused, "Transports other than `dns://`"},
            {"quic://example.org {\n}\n", A, refused, "Transports other than `dns://`"},
            {"grpc://example.org {\n}\n", A, refused, "Transports other than `dns://`"},
            {"https://example.org. {\n}\n", A, refused, "Transports other than `dns://`"},
            {"example.org example.com:1053 {\n}\n", A, refused,
             "All zones of a block must share its port"},
            {"example.org. {\n}\n", A, ok},
            {"example.org {\n}\nsub.example.org:1054 {\n}\n", A, ok},
            // zdirectives.go: a plugin of CoreDNS's plugin.cfg switchboard
            // lacks is warned about (1.14.7 added shed); another name is an
            // unknown directive.
            {".:53 {\nshed\n}\n", A, warns},
            {".:53 {\nfrobnicate\n}\n", R, refused},
            // TestGroupingServers (register_test.go), as Corefiles
            {".:53 {\n}\n", A, ok},
            {".:53 {\n}\n.:54 {\n}\n", A, ok},
            {".:53 {\n}\ncom.:53 {\n}\n", A, ok},
            {".:53 {\nbind 127.0.0.1\n}\n.:54 {\n}\n", A, ok},
            {".:53 {\nbind 127.0.0.1 ::1\n}\n.:54 {\n}\n", A, ok},
            {".:53 {\nbind 127.0.0.1 ::1\n}\ncom.:53 {\nbind 127.0.0.1 ::1\n}\n", A, ok},
            {".:53 {\nbind 127.0.0.1\n}\ncom.:53 {\nbind ::1\n}\n", A, ok},
            {".:53 {\nbind 127.0.0.1 ::1\n}\ncom.:53 {\n}\n", A, ok},
            // TestOverlapAddressChecker (address_test.go): each sequence
            // as server blocks; its last zone is the same or overlaps.
            {".:53 {\n}\n.:53 {\n}\n", R, refused},
            {".:53 {\n}\n.:54 {\n}\n.:53 {\nbind 127.0.0.1\n}\n", R, refused},
            {".:53 {\nbind 127.0.0.1\n}\n.:54 {\n}\n.:53 {\nbind 127.0.0.1\n}\n", R, refused},
            {".:53 {\nbind 127.0.0.1\n}\n.:54 {\n}\n.:53 {\nbind 128.0.0.1\n}\n"
             ".:53 {\nbind 129.0.0.1\n}\n.:53 {\n}\n",
             R, refused},
            {".:53 {\nbind 127.0.0.1\n}\ncom.:53 {\nbind 127.0.0.1\n}\ncom.:53 {\n}\n", R, refused},
        },
        false);
}
