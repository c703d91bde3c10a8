// A Corefile's forward directives as the forwarder's upstream sets: CoreDNS's
// defaults and every option (docs/corefile.md).
#include <catch.hpp>

#include "dns/corefile/options.h"

using namespace sb;
using namespace sb::dns;
using std::chrono::milliseconds;

namespace {

HostPort hp(const char* text) {
    return *parse_host_port(text, 53);
}

std::string wire(const char* text) {
    return name_lower(*name_from_text(text));
}

DnsOptions applied(const std::string& corefile, std::vector<std::string>* warnings = nullptr) {
    DnsOptions options;
    options.listen = {hp("127.0.0.1:5300")};
    auto result = apply_corefile(corefile, "Corefile", nullptr, options);
    REQUIRE(result.ok());
    if (warnings) *warnings = *result;
    return options;
}

}  // namespace

TEST_CASE("forward corefile: the flags path keeps switchboard's behaviour") {
    DnsOptions options;
    CHECK(options.forward.policy == UpstreamPolicy::kPreferred);
    CHECK(options.forward.protocol == UpstreamProtocol::kUdp);
    CHECK(options.forward.max_fails == 0);
    CHECK(options.forward.max_concurrent == 0);
    CHECK(options.forward.failover_rcodes == std::vector<uint8_t>{2, 5});
}

TEST_CASE("forward corefile: a plain forward gets CoreDNS's defaults") {
    DnsOptions options = applied(".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1\n}\n");
    CHECK(options.forward.policy == UpstreamPolicy::kRandom);
    CHECK(options.forward.protocol == UpstreamProtocol::kClient);
    CHECK(options.forward.max_fails == 2);
    CHECK(options.forward.health_check == milliseconds(500));
    CHECK(options.forward.max_concurrent == 0);
    CHECK(options.forward.failover_rcodes.empty());
    CHECK(options.forward.max_attempts == 0);
    CHECK_FALSE(options.forward.read_timeout);
    CHECK_FALSE(options.forward.tls);
    CHECK(options.forward.except.empty());
}

TEST_CASE("forward corefile: every option of the default forward") {
    DnsOptions options = applied(
        ".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1 10.0.0.2 {\n"
        "  policy round_robin\n  max_concurrent 100\n  health_check 2s\n  force_tcp\n"
        "  prefer_udp\n  except Example.ORG corp.example\n }\n}\n");
    CHECK(options.upstreams == std::vector<HostPort>{hp("10.0.0.1"), hp("10.0.0.2")});
    CHECK(options.forward.policy == UpstreamPolicy::kRoundRobin);
    CHECK(options.forward.max_concurrent == 100);
    CHECK(options.forward.health_check == milliseconds(2000));
    CHECK(options.forward.protocol == UpstreamProtocol::kTcp);  // force_tcp wins
    CHECK(options.forward.except ==
          std::vector<std::string>{wire("example.org"), wire("corp.example")});
    options = applied(
        ".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1 {\n  prefer_udp\n"
        "  policy sequential\n }\n}\n");
    CHECK(options.forward.protocol == UpstreamProtocol::kUdp);
    CHECK(options.forward.policy == UpstreamPolicy::kSequential);
}

TEST_CASE("forward corefile: the kubernetes block's forward FROM is a set of its own") {
    std::vector<std::string> warnings;
    DnsOptions options = applied(
        ".:53 {\n kubernetes cluster.local\n forward corp.example 10.0.0.7 {\n"
        "  policy sequential\n }\n forward svc.cluster.local 10.0.0.9\n"
        " forward . 10.0.0.1\n}\n"
        "consul.local {\n forward . 10.0.0.5 {\n  max_concurrent 5\n }\n}\n",
        &warnings);
    CHECK(warnings == std::vector<std::string>{
                          "Corefile:6: forward svc.cluster.local. is inside the cluster zone, "
                          "which is answered from the cluster; ignored"});
    CHECK(options.upstreams == std::vector<HostPort>{hp("10.0.0.1")});
    REQUIRE(options.stubs.size() == 2);
    const StubZone& consul = options.stubs[0];
    CHECK(consul.zone == wire("consul.local"));
    CHECK_FALSE(consul.cluster_block);
    CHECK(consul.options.max_concurrent == 5);
    CHECK(consul.options.policy == UpstreamPolicy::kRandom);
    const StubZone& corp = options.stubs[1];
    CHECK(corp.zone == wire("corp.example"));
    CHECK(corp.cluster_block);
    CHECK(corp.upstreams == std::vector<HostPort>{hp("10.0.0.7")});
    CHECK(corp.options.policy == UpstreamPolicy::kSequential);
    CHECK(corp.options.max_fails == 2);
}

// CoreDNS's plugin/forward/setup_test.go (1.14), transcribed: each input as
// the body of a kubernetes block, through apply_corefile (what `switchboard
// plan` and the daemon run), with CoreDNS's verdict. Where CoreDNS's message
// is the contract (`refused` non-empty) ours must contain it.
namespace {

struct SetupRow {
    const char* input;
    bool accepted;
    const char* refused = "";  // a part of the refusal's message
};

// `body` in the kubernetes block of a Corefile applied over `options` (when
// given) or fresh DnsOptions.
Result<std::vector<std::string>> apply_block(const std::string& body,
                                             DnsOptions* options = nullptr) {
    DnsOptions own;
    DnsOptions& target = options ? *options : own;
    target.listen = {hp("127.0.0.1:5300")};
    return apply_corefile(".:53 {\n kubernetes cluster.local\n" + body + "\n}\n", "Corefile",
                          nullptr, target);
}

void check_rows(const std::vector<SetupRow>& rows) {
    for (const auto& row : rows) {
        INFO(row.input);
        auto result = apply_block(row.input);
        CHECK(result.ok() == row.accepted);
        if (!result.ok()) CHECK_THAT(result.error().message, Catch::Contains(row.refused));
    }
}

}  // namespace

TEST_CASE("forward setup_test: TestSetup") {
    check_rows({
        {"forward . 127.0.0.1", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain example.org\n}\n", true},
        {"forward . 127.0.0.1 {\nexcept miek.nl\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_fails 3\n}\n", true},
        {"forward . 127.0.0.1 {\nforce_tcp\n}\n", true},
        {"forward . 127.0.0.1 {\nprefer_udp\n}\n", true},
        {"forward . 127.0.0.1 {\nforce_tcp\nprefer_udp\n}\n", true},
        {"forward . 127.0.0.1:53", true},
        {"forward . 127.0.0.1:8080", true},
        {"forward . [::1]:53", true},
        {"forward . [2003::1]:53", true},
        {"forward . 127.0.0.1 \n", true},
        {"forward 10.9.3.0/18 127.0.0.1", true},
        {"forward . ::1\nforward com ::2", true},
        {"forward . tls://[2400:3200::1%dns.alidns.com]:853 {\ntls\n}\n", true},
        {"forward . a27.0.0.1", false, "not an IP address or file"},
        {"forward . 127.0.0.1 {\nblaatl\n}\n", false, "blaatl"},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain\n}\n", false, "domain"},
        {"forward xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 127.0.0.1 \n",
         false},
        // CoreDNS 1.14 takes https:// (DoH); switchboard refuses it (docs/corefile.md).
        {"forward . https://127.0.0.1 \n", false, "\"https\":// upstreams are not supported"},
        {"forward . https://1.1.1.1/ \n", false, "https"},
    });
}

TEST_CASE("forward setup_test: TestSourceAddress") {
    check_rows({
        {"forward . 127.0.0.1 {\nsource_address 192.0.2.1\n}\n", true},
        {"forward . 127.0.0.1 {\nsource_address not-an-ip\n}\n", false, "invalid IP address"},
        {"forward . 127.0.0.1 {\nsource_address 2001:0db8:85a3:0000:1319:8a2e:0370:7344\n}\n",
         true},
        {"forward . 127.0.0.1 {\nsource_address ::ffff:192.0.2.1\n}\n", true},
        {"forward . 127.0.0.1 {\nsource_address \n}\n", false, "source_address"},
    });
    DnsOptions options;
    REQUIRE(
        apply_block("forward . 127.0.0.1 {\nsource_address ::ffff:192.0.2.1\n}", &options).ok());
    CHECK(options.forward.source == IpAddress::parse("192.0.2.1").value());
}

TEST_CASE("forward setup_test: TestSetupTLS") {
    check_rows({
        {"forward . tls://127.0.0.1 {\ntls_servername dns\n}", true},
        {"forward . tls://127.0.0.1%example.net {\ntls\n}", true},
        {"forward . tls://127.0.0.1%example.net:854 tls://127.0.0.2%example.net "
         "tls://fe80::1%example.com {\ntls\n}",
         true},
        {"forward . tls://127.0.0.1%example.net:854 {\ntls\n}", true},
        {"forward . tls://127.0.0.1%example.net:854 {\ntls_servername foo\n}", false,
         "both forward (\"foo\") and proxy level (\"example.net\") TLS servernames are set for "
         "upstream tls://127.0.0.1:854"},
        {"forward . 127.0.0.1 {\ntls_servername dns\n}", true},
        {"forward . 127.0.0.1 {\ntls\n}", true},
        {"forward . tls://127.0.0.1", true},
        {"forward . tls://[2400:3200::1%dns.alidns.com]:853 {\ntls\n}", true},
        {"forward . tls://[2400:3200::1]:853 {\ntls\ntls_servername dns.alidns.com\n}", true},
        // pkg/tls: at most three arguments, each file read now.
        {"forward . tls://127.0.0.1 {\ntls a b c d\n}", false, "tls"},
        {"forward . tls://127.0.0.1 {\ntls /nonexistent/ca.pem\n}", false,
         "Corefile:4: forward: tls: cannot read /nonexistent/ca.pem"},
        {"forward . tls://127.0.0.1 {\ntls /nonexistent/c.pem /nonexistent/k.pem\n}", false,
         "cannot read /nonexistent/c.pem"},
        // A readable file that holds no certificate.
        {"forward . tls://127.0.0.1 {\ntls " SWITCHBOARD_TEST_DATA "/resolv.conf\n}", false,
         "Corefile:4: forward: tls: could not read root certs from " SWITCHBOARD_TEST_DATA
         "/resolv.conf"},
        {"forward . tls://127.0.0.1 {\ntls " SWITCHBOARD_TEST_DATA
         "/resolv.conf " SWITCHBOARD_TEST_DATA "/resolv.conf\n}",
         false, "could not load TLS cert " SWITCHBOARD_TEST_DATA "/resolv.conf"},
    });
}

TEST_CASE("forward setup_test: TestSetupResolvconf") {
    const std::string dir = SWITCHBOARD_TEST_DATA;
    check_rows({
        {("forward . " + dir + "/resolv.conf").c_str(), true},
        {"forward . /dev/null", false, "no nameservers found"},
        {("forward . " + dir + "/resolv-comments.conf 127.0.0.1").c_str(), true},
        {("forward . " + dir + "/resolv-comments.conf").c_str(), false, "no nameservers found"},
        {"forward . /nonexistent/resolv.conf", false,
         "Corefile:3: forward: not an IP address or file \"/nonexistent/resolv.conf\""},
    });
    DnsOptions options;
    REQUIRE(apply_block("forward . " + dir + "/resolv.conf 10.0.0.1", &options).ok());
    CHECK(options.upstreams == std::vector<HostPort>{hp("192.0.2.53"), hp("10.0.0.1")});
}

TEST_CASE("forward setup_test: numbers (max_concurrent, max_connect_attempts, max_idle_conns)") {
    check_rows({
        {"forward . 127.0.0.1 {\nmax_concurrent 1000\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_concurrent many\n}\n", false, "max_concurrent"},
        {"forward . 127.0.0.1 {\nmax_concurrent -4\n}\n", false, "max_concurrent"},
        {"forward . 127.0.0.1 {\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_connect_attempts 0\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_connect_attempts 5\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_connect_attempts many\n}\n", false, "max_connect_attempts"},
        {"forward . 127.0.0.1 {\nmax_connect_attempts -4\n}\n", false, "max_connect_attempts"},
        {"forward . 127.0.0.1 {\nmax_idle_conns 10\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_idle_conns 0\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_idle_conns many\n}\n", false, "max_idle_conns"},
        {"forward . 127.0.0.1 {\nmax_idle_conns -1\n}\n", false, "max_idle_conns"},
    });
}

TEST_CASE("forward setup_test: TestSetupHealthCheck") {
    check_rows({
        {"forward . 127.0.0.1\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s no_rec\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s no_rec domain example.org\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain example.org\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain .\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain example.org.\n}\n", true},
        {"forward . 127.0.0.1 {\nhealth_check no_rec\n}\n", false, "not a duration"},
        {"forward . 127.0.0.1 {\nhealth_check domain example.org\n}\n", false, "not a duration"},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s rec\n}\n", false,
         "health_check: unknown option \"rec\""},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain\n}\n", false, "domain needs a NAME"},
        {"forward . 127.0.0.1 {\nhealth_check 0.5s domain example..org\n}\n", false,
         "health_check: invalid domain name"},
    });
}

TEST_CASE("forward setup_test: next, failfast, failover") {
    check_rows({
        {"forward . 127.0.0.1 {\nnext NXDOMAIN\n}\n", true},
        {"forward . 127.0.0.1 {\nnext SERVFAIL\n}\n", true},
        {"forward . 127.0.0.1 {\nnext NXDOMAIN SERVFAIL\n}\n", true},
        {"forward . 127.0.0.1 {\nnext NXDOMAIN SERVFAIL REFUSED\n}\n", true},
        {"forward . 127.0.0.1 {\nnext\n}\n", false, "next"},
        {"forward . 127.0.0.1 {\nnext INVALID\n}\n", false, "\"INVALID\" is not a valid rcode"},
        {"forward . 127.0.0.1 {\nnext NOERROR INVALID\n}\n", false, "is not a valid rcode"},
        {"forward . 127.0.0.1 {\nfailfast_all_unhealthy_upstreams\n}\n", true},
        {"forward . 127.0.0.1 {\nfailfast_all_unhealthy_upstreams false\n}\n", false,
         "failfast_all_unhealthy_upstreams"},
        {"forward . 127.0.0.1 {\nfailover NOERROR\n}", false, "NoError cannot be used in failover"},
        {"forward . 127.0.0.1 {\nfailover NOT_A_VALID_RCODE\n}", false, "not a valid rcode"},
        {"forward . 127.0.0.1 127.0.0.2 {\nfailover ServFail refused\n}", true},
    });
}

TEST_CASE("forward setup_test: TestSetupMaxAge and TestSetupReadTimeout") {
    check_rows({
        {"forward . 127.0.0.1\n", true},
        {"forward . 127.0.0.1 {\nmax_age 30s\n}\n", true},
        {"forward . 127.0.0.1 {\nexpire 10s\nmax_age 10s\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_age 0s\n}\n", true},
        {"forward . 127.0.0.1 {\nmax_age -1s\n}\n", false, "negative"},
        {"forward . 127.0.0.1 {\nmax_age invalid\n}\n", false, "max_age"},
        {"forward . 127.0.0.1 {\nexpire 30s\nmax_age 10s\n}\n", false, "max_age"},
        {"forward . 127.0.0.1 {\nread_timeout 30s\n}\n", true},
        {"forward . 127.0.0.1 {\nread_timeout 500ms\n}\n", true},
        {"forward . 127.0.0.1 {\nread_timeout 0s\n}\n", false, "read_timeout must be positive"},
        {"forward . 127.0.0.1 {\nread_timeout -1s\n}\n", false, "read_timeout"},
        {"forward . 127.0.0.1 {\nread_timeout invalid\n}\n", false, "read_timeout"},
        {"forward . 127.0.0.1 {\nread_timeout\n}\n", false, "read_timeout"},
    });
}

TEST_CASE("forward corefile: the honoured options reach the upstream set") {
    DnsOptions options;
    REQUIRE(apply_block("forward . 10.0.0.1 tls://10.0.0.2 tls://10.0.0.3%other.example:8853 {\n"
                        " max_fails 0\n failover SERVFAIL NXDOMAIN\n max_connect_attempts 7\n"
                        " read_timeout 250ms\n source_address 10.0.0.9\n"
                        " failfast_all_unhealthy_upstreams\n}",
                        &options)
                .ok());
    const ForwardSetOptions& set = options.forward;
    CHECK(set.max_fails == 0);
    CHECK(set.failover_rcodes == std::vector<uint8_t>{2, 3});
    CHECK(set.max_attempts == 7);
    CHECK(set.read_timeout == milliseconds(250));
    CHECK(set.source == IpAddress::parse("10.0.0.9").value());
    CHECK(set.failfast_all_down);
    REQUIRE(set.tls);
    CHECK(set.tls_upstreams == std::vector<TlsUpstream>{{hp("10.0.0.2:853"), ""},
                                                        {hp("10.0.0.3:8853"), "other.example"}});
    CHECK(options.upstreams ==
          std::vector<HostPort>{hp("10.0.0.1"), hp("10.0.0.2:853"), hp("10.0.0.3:8853")});
    DnsOptions named;
    REQUIRE(apply_block("forward . tls://10.0.0.2 {\n tls_servername dns.example\n}", &named).ok());
    CHECK(named.forward.tls_upstreams ==
          std::vector<TlsUpstream>{{hp("10.0.0.2:853"), "dns.example"}});
}

TEST_CASE("forward corefile: next hands on only to a forward switchboard does not chain") {
    std::vector<std::string> warnings;
    applied(".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1 {\n  next NXDOMAIN\n }\n}\n",
            &warnings);
    CHECK(warnings == std::vector<std::string>{"Corefile:3: forward: next/next_on_nodata: no "
                                               "forward follows in this block; ignored"});
    auto chained =
        apply_block("forward example.org 10.0.0.1 {\n next NXDOMAIN\n}\nforward . 10.0.0.2\n");
    REQUIRE_FALSE(chained.ok());
    CHECK(chained.error().message ==
          "Corefile:3: forward: next and next_on_nodata hand a reply on to the next forward "
          "(line 6); switchboard does not chain forwards");
}
