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
    CHECK(options.forward.next_on_servfail);
}

TEST_CASE("forward corefile: a plain forward gets CoreDNS's defaults") {
    DnsOptions options = applied(".:53 {\n kubernetes cluster.local\n forward . 10.0.0.1\n}\n");
    CHECK(options.forward.policy == UpstreamPolicy::kRandom);
    CHECK(options.forward.protocol == UpstreamProtocol::kClient);
    CHECK(options.forward.max_fails == 2);
    CHECK(options.forward.health_check == milliseconds(500));
    CHECK(options.forward.max_concurrent == 0);
    CHECK_FALSE(options.forward.next_on_servfail);
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
