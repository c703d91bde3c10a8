// The ipvsadm -Sn text of the model: what --dry-run prints and what
// `ipvsadm -R` loads in the benchmark.
#include <netinet/in.h>
#include <catch.hpp>

#include <string>

#include "rules/ipvs/model.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules::ipvs;
using sb::rules::testing::ip;

namespace {

Service service(const char* address, uint8_t protocol, uint16_t port,
                std::vector<std::pair<const char*, uint16_t>> destinations) {
    Service s;
    s.server.key = ServiceKey{ip(address), protocol, port};
    for (const auto& [a, p] : destinations) {
        RealServer rs;
        rs.address = ip(a);
        rs.port = p;
        s.destinations.push_back(rs);
    }
    return s;
}

IpvsState state_of(std::vector<Service> services) {
    IpvsState out;
    for (Service& s : services) out.emplace(s.server.key, std::move(s));
    return out;
}

}  // namespace

TEST_CASE("ipvsadm text of an IPv4 TCP service and its real servers", "[model]") {
    const IpvsState state = state_of(
        {service("10.96.0.1", IPPROTO_TCP, 443, {{"10.0.0.5", 6443}, {"10.0.0.6", 6443}})});
    REQUIRE(to_ipvsadm_text(state) ==
            "-A -t 10.96.0.1:443 -s rr\n"
            "-a -t 10.96.0.1:443 -r 10.0.0.5:6443 -m -w 1\n"
            "-a -t 10.96.0.1:443 -r 10.0.0.6:6443 -m -w 1\n");
}

TEST_CASE("ipvsadm text brackets IPv6 addresses", "[model]") {
    const IpvsState state =
        state_of({service("fd00:96::10", IPPROTO_TCP, 80, {{"fd00:244:1::7", 8080}})});
    REQUIRE(to_ipvsadm_text(state) ==
            "-A -t [fd00:96::10]:80 -s rr\n"
            "-a -t [fd00:96::10]:80 -r [fd00:244:1::7]:8080 -m -w 1\n");
}

TEST_CASE("ipvsadm text of UDP and SCTP services, the scheduler and weights", "[model]") {
    Service dns = service("10.96.0.10", IPPROTO_UDP, 53, {{"10.244.1.2", 53}});
    dns.server.scheduler = "sh";
    dns.destinations[0].weight = 0;
    Service sctp = service("10.96.0.20", IPPROTO_SCTP, 3868, {{"10.244.1.3", 3868}});
    sctp.server.scheduler = "lc";
    REQUIRE(to_ipvsadm_text(state_of({dns, sctp})) ==
            "-A -u 10.96.0.10:53 -s sh\n"
            "-a -u 10.96.0.10:53 -r 10.244.1.2:53 -m -w 0\n"
            "-A --sctp-service 10.96.0.20:3868 -s lc\n"
            "-a --sctp-service 10.96.0.20:3868 -r 10.244.1.3:3868 -m -w 1\n");
}

TEST_CASE("ipvsadm text of persistence: -p with the timeout and no netmask", "[model]") {
    Service v4 = service("10.96.0.1", IPPROTO_TCP, 443, {});
    v4.server.persistent = true;
    v4.server.timeout_seconds = 10800;
    Service v6 = service("fd00:96::1", IPPROTO_TCP, 443, {});
    v6.server.persistent = true;
    v6.server.timeout_seconds = 60;
    // A timeout without persistence is not printed: ipvsadm prints -p only
    // for IP_VS_SVC_F_PERSISTENT.
    Service plain = service("10.96.0.2", IPPROTO_TCP, 80, {});
    plain.server.timeout_seconds = 300;
    REQUIRE(to_ipvsadm_text(state_of({v4, v6, plain})) ==
            "-A -t 10.96.0.1:443 -s rr -p 10800\n"
            "-A -t 10.96.0.2:80 -s rr\n"
            "-A -t [fd00:96::1]:443 -s rr -p 60\n");
}

TEST_CASE("ipvsadm text lists services in key order: address, then protocol, then port",
          "[model]") {
    const IpvsState state = state_of(
        {service("10.96.0.2", IPPROTO_TCP, 80, {}), service("10.96.0.1", IPPROTO_UDP, 53, {}),
         service("10.96.0.1", IPPROTO_TCP, 8080, {}), service("10.96.0.1", IPPROTO_TCP, 443, {})});
    REQUIRE(to_ipvsadm_text(state) ==
            "-A -t 10.96.0.1:443 -s rr\n"
            "-A -t 10.96.0.1:8080 -s rr\n"
            "-A -u 10.96.0.1:53 -s rr\n"
            "-A -t 10.96.0.2:80 -s rr\n");
    REQUIRE(to_ipvsadm_text({}).empty());
}

TEST_CASE("names of protocols and op kinds", "[model]") {
    REQUIRE(std::string(protocol_name(IPPROTO_TCP)) == "TCP");
    REQUIRE(std::string(protocol_name(IPPROTO_UDP)) == "UDP");
    REQUIRE(std::string(protocol_name(IPPROTO_SCTP)) == "SCTP");
    REQUIRE(std::string(protocol_name(IPPROTO_ICMP)) == "unknown");
    REQUIRE(std::string(to_string(OpKind::kAddService)) == "add service");
    REQUIRE(std::string(to_string(OpKind::kEditDestination)) == "edit destination");
    REQUIRE(std::string(to_string(OpKind::kDeleteDestination)) == "delete destination");
}
