#include <algorithm>
#include <catch.hpp>

#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using namespace sb::dns;
using namespace sb::watch;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}
std::string wire(const std::string& text) {
    return *name_from_text(text);
}

Service cluster_ip(const std::string& ns, const std::string& name, std::vector<IpAddress> ips) {
    Service s;
    s.meta.ns = ns;
    s.meta.name = name;
    s.cluster_ips = std::move(ips);
    s.ports.push_back(ServicePort{"http", Protocol::kTCP, 80, {}, 0});
    s.ports.push_back(ServicePort{"dns", Protocol::kUDP, 53, {}, 0});
    s.ports.push_back(ServicePort{"", Protocol::kTCP, 9000, {}, 0});
    return s;
}

Endpoint endpoint(const char* address, const std::string& hostname, bool ready,
                  const std::string& pod = "") {
    Endpoint e;
    e.addresses.push_back(ip(address));
    e.hostname = hostname;
    e.ready = ready;
    if (!pod.empty()) e.target_ref = ObjectReference{"Pod", "default", pod};
    return e;
}

struct Fixture {
    SnapshotBuilder snapshot;

    Fixture() {
        snapshot.synced(true).generation(42);
        add(cluster_ip("default", "web", {ip("10.96.0.10"), ip("fd00::10")}));
        add(cluster_ip("kube-system", "kube-dns", {ip("10.96.0.53")}));

        Service nginx;
        nginx.meta = {"default", "nginx", "", {}, {}};
        nginx.headless = true;
        add(nginx);
        EndpointSlice slice;
        slice.meta = {"default", "nginx-abc", "", {}, {}};
        slice.service_name = "nginx";
        slice.endpoints = {endpoint("10.0.0.1", "web-0", true, "web-0"),
                           endpoint("10.0.0.2", "web-1", true, "web-1"),
                           endpoint("10.0.0.3", "web-2", false, "web-2"),
                           endpoint("10.0.0.4", "", true, "other")};
        slice.ports = {EndpointPort{"http", Protocol::kTCP, 8080}};
        add(slice);
        EndpointSlice slice6 = slice;
        slice6.meta.name = "nginx-v6";
        slice6.address_type = AddressType::kIPv6;
        slice6.endpoints = {endpoint("fd00::1", "web-0", true, "web-0")};
        add(slice6);

        Service empty;
        empty.meta = {"default", "empty", "", {}, {}};
        empty.headless = true;
        add(empty);
        EndpointSlice not_ready;
        not_ready.meta = {"default", "empty-x", "", {}, {}};
        not_ready.service_name = "empty";
        not_ready.endpoints = {endpoint("10.0.1.1", "", false)};
        add(not_ready);

        Service ext;
        ext.meta = {"default", "ext", "", {}, {}};
        ext.type = ServiceType::kExternalName;
        ext.external_name = "example.com";
        add(ext);
        Service alias;
        alias.meta = {"default", "alias", "", {}, {}};
        alias.type = ServiceType::kExternalName;
        alias.external_name = "Web.default.svc.cluster.local";
        add(alias);
    }

    void add(const Service& s) { snapshot.add(s); }
    void add(const EndpointSlice& s) { snapshot.add(s); }

    std::shared_ptr<const Zone> zone(PodRecords pods = PodRecords::kInsecure) const {
        ZoneConfig config;
        config.pods = pods;
        return *Zone::build(*snapshot.build(), config);
    }
};

Message query(const std::string& name, uint16_t qtype) {
    Message q;
    q.header.id = 77;
    q.header.rd = true;
    q.questions.push_back({wire(name), qtype, kClassIN});
    return q;
}

Resolution ask(const Zone& zone, const std::string& name, uint16_t qtype, bool forwarding = false) {
    return resolve(&zone, query(name, qtype), ResolverOptions{forwarding});
}

std::vector<std::string> addresses(const std::vector<Record>& records) {
    std::vector<std::string> out;
    for (const auto& r : records) {
        if (r.rtype == type::kA)
            out.push_back(IpAddress::from_bytes(IpFamily::kV4,
                                                reinterpret_cast<const uint8_t*>(r.rdata.data()))
                              .to_string());
        if (r.rtype == type::kAAAA)
            out.push_back(IpAddress::from_bytes(IpFamily::kV6,
                                                reinterpret_cast<const uint8_t*>(r.rdata.data()))
                              .to_string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

Rcode rcode(const Resolution& r) {
    return static_cast<Rcode>(r.response.header.rcode);
}

void check_soa_authority(const Resolution& r) {
    REQUIRE(r.response.authority.size() == 1);
    const Record& soa = r.response.authority[0];
    CHECK(soa.rtype == type::kSOA);
    CHECK(soa.name == wire("cluster.local"));
    CHECK(soa.rdata == rdata_soa(wire("ns.dns.cluster.local"), wire("hostmaster.cluster.local"), 42,
                                 7200, 1800, 86400, 30));
}

}  // namespace

TEST_CASE("a ClusterIP Service answers A and AAAA with its cluster IPs") {
    auto zone = Fixture().zone();
    auto a = ask(*zone, "web.default.svc.cluster.local", type::kA);
    CHECK(a.kind == Resolution::Kind::kReply);
    CHECK(rcode(a) == Rcode::kNoError);
    CHECK(a.response.header.aa);
    CHECK(a.response.header.qr);
    CHECK(a.response.header.rd);
    CHECK(a.response.header.id == 77);
    CHECK(addresses(a.response.answers) == std::vector<std::string>{"10.96.0.10"});
    CHECK(a.response.answers[0].ttl == 30);
    auto aaaa = ask(*zone, "web.default.svc.cluster.local", type::kAAAA);
    CHECK(addresses(aaaa.response.answers) == std::vector<std::string>{"fd00::10"});
}

TEST_CASE("names match case-insensitively and the question is echoed as asked") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "WEB.Default.SVC.cluster.LOCAL", type::kA);
    CHECK(rcode(r) == Rcode::kNoError);
    CHECK(r.response.questions[0].name == wire("WEB.Default.SVC.cluster.LOCAL"));
    CHECK(addresses(r.response.answers) == std::vector<std::string>{"10.96.0.10"});
}

TEST_CASE("a headless Service answers with its ready endpoints only") {
    auto zone = Fixture().zone();
    auto a = ask(*zone, "nginx.default.svc.cluster.local", type::kA);
    CHECK(addresses(a.response.answers) ==
          std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.4"});
    auto aaaa = ask(*zone, "nginx.default.svc.cluster.local", type::kAAAA);
    CHECK(addresses(aaaa.response.answers) == std::vector<std::string>{"fd00::1"});
}

TEST_CASE("a headless Service without ready endpoints does not exist") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "empty.default.svc.cluster.local", type::kA);
    CHECK(rcode(r) == Rcode::kNXDomain);
    check_soa_authority(r);
}

TEST_CASE("endpoint names: hostname, else the dashed address") {
    auto zone = Fixture().zone();
    auto web0 = ask(*zone, "web-0.nginx.default.svc.cluster.local", type::kA);
    CHECK(addresses(web0.response.answers) == std::vector<std::string>{"10.0.0.1"});
    auto web0v6 = ask(*zone, "web-0.nginx.default.svc.cluster.local", type::kAAAA);
    CHECK(addresses(web0v6.response.answers) == std::vector<std::string>{"fd00::1"});
    auto dashed = ask(*zone, "10-0-0-4.nginx.default.svc.cluster.local", type::kA);
    CHECK(addresses(dashed.response.answers) == std::vector<std::string>{"10.0.0.4"});
    auto not_ready = ask(*zone, "web-2.nginx.default.svc.cluster.local", type::kA);
    CHECK(rcode(not_ready) == Rcode::kNXDomain);
}

TEST_CASE("SRV for a ClusterIP Service's named ports") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "_http._tcp.web.default.svc.cluster.local", type::kSRV);
    REQUIRE(r.response.answers.size() == 1);
    CHECK(r.response.answers[0].rdata ==
          rdata_srv(0, 100, 80, wire("web.default.svc.cluster.local")));
    CHECK(addresses(r.response.additional) == std::vector<std::string>{"10.96.0.10", "fd00::10"});
    auto udp = ask(*zone, "_dns._udp.web.default.svc.cluster.local", type::kSRV);
    REQUIRE(udp.response.answers.size() == 1);
    CHECK(udp.response.answers[0].rdata ==
          rdata_srv(0, 100, 53, wire("web.default.svc.cluster.local")));
    // The protocol must match the port's.
    CHECK(rcode(ask(*zone, "_http._udp.web.default.svc.cluster.local", type::kSRV)) ==
          Rcode::kNXDomain);
}

TEST_CASE("SRV for a headless Service: one per ready endpoint, targets in additional") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "_http._tcp.nginx.default.svc.cluster.local", type::kSRV);
    std::vector<std::string> rdatas;
    for (const auto& answer : r.response.answers) rdatas.push_back(answer.rdata);
    std::sort(rdatas.begin(), rdatas.end());
    // Three distinct targets (web-0 has two addresses but one name): weight 100/3.
    std::vector<std::string> expected = {
        rdata_srv(0, 33, 8080, wire("10-0-0-4.nginx.default.svc.cluster.local")),
        rdata_srv(0, 33, 8080, wire("web-0.nginx.default.svc.cluster.local")),
        rdata_srv(0, 33, 8080, wire("web-1.nginx.default.svc.cluster.local")),
    };
    std::sort(expected.begin(), expected.end());
    CHECK(rdatas == expected);
    CHECK(addresses(r.response.additional) ==
          std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.4", "fd00::1"});
}

TEST_CASE("an ExternalName Service is a CNAME, chased in the zone or upstream") {
    auto zone = Fixture().zone();
    auto local = ask(*zone, "ext.default.svc.cluster.local", type::kA);
    CHECK(local.kind == Resolution::Kind::kReply);
    REQUIRE(local.response.answers.size() == 1);
    CHECK(local.response.answers[0].rtype == type::kCNAME);
    CHECK(local.response.answers[0].rdata == wire("example.com"));

    auto forwarded = ask(*zone, "ext.default.svc.cluster.local", type::kA, true);
    CHECK(forwarded.kind == Resolution::Kind::kForward);
    CHECK(forwarded.forward == Question{wire("example.com"), type::kA, kClassIN});
    CHECK(forwarded.response.answers.size() == 1);

    auto cname = ask(*zone, "ext.default.svc.cluster.local", type::kCNAME, true);
    CHECK(cname.kind == Resolution::Kind::kReply);
    CHECK(cname.response.answers.size() == 1);

    auto alias = ask(*zone, "alias.default.svc.cluster.local", type::kA, true);
    CHECK(alias.kind == Resolution::Kind::kReply);
    REQUIRE(alias.response.answers.size() == 2);
    CHECK(alias.response.answers[0].rtype == type::kCNAME);
    CHECK(alias.response.answers[0].rdata == wire("web.default.svc.cluster.local"));
    CHECK(alias.response.answers[1].name == wire("web.default.svc.cluster.local"));
    CHECK(addresses(alias.response.answers) == std::vector<std::string>{"10.96.0.10"});
}

TEST_CASE("PTR records for cluster IPs and ready headless endpoints") {
    auto zone = Fixture().zone();
    auto svc = ask(*zone, "10.0.96.10.in-addr.arpa", type::kPTR);
    REQUIRE(svc.response.answers.size() == 1);
    CHECK(svc.response.answers[0].rdata == wire("web.default.svc.cluster.local"));
    CHECK(svc.response.header.aa);
    auto ep = ask(*zone, "1.0.0.10.in-addr.arpa", type::kPTR);
    REQUIRE(ep.response.answers.size() == 1);
    CHECK(ep.response.answers[0].rdata == wire("web-0.nginx.default.svc.cluster.local"));
    std::string v6 = name_to_text(reverse_name(ip("fd00::10")));
    auto six = ask(*zone, v6, type::kPTR);
    REQUIRE(six.response.answers.size() == 1);
    CHECK(six.response.answers[0].rdata == wire("web.default.svc.cluster.local"));
    // A not-ready endpoint has no PTR; unknown reverse names are someone else's.
    CHECK(ask(*zone, "3.0.0.10.in-addr.arpa", type::kPTR).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kRefused));
    CHECK(ask(*zone, "3.0.0.10.in-addr.arpa", type::kPTR, true).kind == Resolution::Kind::kForward);
}

TEST_CASE("pod records follow --dns-pods") {
    Fixture f;
    auto insecure = f.zone(PodRecords::kInsecure);
    auto any = ask(*insecure, "10-1-2-3.default.pod.cluster.local", type::kA);
    CHECK(addresses(any.response.answers) == std::vector<std::string>{"10.1.2.3"});
    auto v6 = ask(*insecure, "fd00--5.default.pod.cluster.local", type::kAAAA);
    CHECK(addresses(v6.response.answers) == std::vector<std::string>{"fd00::5"});
    CHECK(rcode(ask(*insecure, "10-1-2.default.pod.cluster.local", type::kA)) == Rcode::kNXDomain);
    CHECK(rcode(ask(*insecure, "10-1-2-300.default.pod.cluster.local", type::kA)) ==
          Rcode::kNXDomain);
    auto nodata = ask(*insecure, "10-1-2-3.default.pod.cluster.local", type::kAAAA);
    CHECK(rcode(nodata) == Rcode::kNoError);
    CHECK(nodata.response.answers.empty());
    check_soa_authority(nodata);

    auto verified = f.zone(PodRecords::kVerified);
    CHECK(addresses(
              ask(*verified, "10-0-0-1.default.pod.cluster.local", type::kA).response.answers) ==
          std::vector<std::string>{"10.0.0.1"});
    // Known pods only, in their own namespace (not-ready pods exist too).
    CHECK(addresses(
              ask(*verified, "10-0-0-3.default.pod.cluster.local", type::kA).response.answers) ==
          std::vector<std::string>{"10.0.0.3"});
    CHECK(rcode(ask(*verified, "10-1-2-3.default.pod.cluster.local", type::kA)) ==
          Rcode::kNXDomain);
    CHECK(rcode(ask(*verified, "10-0-0-1.kube-system.pod.cluster.local", type::kA)) ==
          Rcode::kNXDomain);

    auto disabled = f.zone(PodRecords::kDisabled);
    CHECK(rcode(ask(*disabled, "10-1-2-3.default.pod.cluster.local", type::kA)) ==
          Rcode::kNXDomain);
    CHECK(rcode(ask(*disabled, "pod.cluster.local", type::kA)) == Rcode::kNXDomain);
}

TEST_CASE("dns-version TXT, the apex SOA and NS") {
    auto zone = Fixture().zone();
    auto txt = ask(*zone, "dns-version.cluster.local", type::kTXT);
    REQUIRE(txt.response.answers.size() == 1);
    CHECK(txt.response.answers[0].rdata == rdata_txt({"1.1.0"}));
    auto soa = ask(*zone, "cluster.local", type::kSOA);
    REQUIRE(soa.response.answers.size() == 1);
    CHECK(soa.response.answers[0].rtype == type::kSOA);
    auto ns = ask(*zone, "cluster.local", type::kNS);
    REQUIRE(ns.response.answers.size() == 1);
    CHECK(ns.response.answers[0].rdata == wire("ns.dns.cluster.local"));
}

TEST_CASE("NODATA for existing names and empty non-terminals, NXDOMAIN otherwise") {
    auto zone = Fixture().zone();
    for (const char* name : {"web.default.svc.cluster.local", "default.svc.cluster.local",
                             "svc.cluster.local", "_tcp.web.default.svc.cluster.local"}) {
        INFO(name);
        auto r = ask(*zone, name, type::kTXT);
        CHECK(rcode(r) == Rcode::kNoError);
        CHECK(r.response.answers.empty());
        check_soa_authority(r);
    }
    for (const char* name : {"nope.default.svc.cluster.local", "web.nope.svc.cluster.local",
                             "x.web.default.svc.cluster.local", "other.cluster.local"}) {
        INFO(name);
        auto r = ask(*zone, name, type::kA);
        CHECK(rcode(r) == Rcode::kNXDomain);
        check_soa_authority(r);
    }
}

TEST_CASE("search-path names under the zone are NXDOMAIN without forwarding") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "www.example.com.default.svc.cluster.local", type::kA, true);
    CHECK(r.kind == Resolution::Kind::kReply);
    CHECK(rcode(r) == Rcode::kNXDomain);
}

TEST_CASE("other zones are forwarded, or refused without upstreams") {
    auto zone = Fixture().zone();
    auto refused = ask(*zone, "www.example.com", type::kA, false);
    CHECK(rcode(refused) == Rcode::kRefused);
    CHECK_FALSE(refused.response.header.ra);
    auto forwarded = ask(*zone, "www.example.com", type::kA, true);
    CHECK(forwarded.kind == Resolution::Kind::kForward);
    CHECK(forwarded.forward == Question{wire("www.example.com"), type::kA, kClassIN});
}

TEST_CASE("cluster names are SERVFAIL until the Store is synced") {
    Fixture f;
    f.snapshot.synced(false);
    auto zone = f.zone();
    CHECK(rcode(ask(*zone, "web.default.svc.cluster.local", type::kA)) == Rcode::kServFail);
    CHECK(rcode(ask(*zone, "10.0.96.10.in-addr.arpa", type::kPTR)) == Rcode::kServFail);
    CHECK(ask(*zone, "www.example.com", type::kA, true).kind == Resolution::Kind::kForward);
}

TEST_CASE("ANY gets one RRset (RFC 8482)") {
    auto zone = Fixture().zone();
    auto r = ask(*zone, "web.default.svc.cluster.local", type::kANY);
    REQUIRE_FALSE(r.response.answers.empty());
    uint16_t first = r.response.answers[0].rtype;
    for (const auto& answer : r.response.answers) CHECK(answer.rtype == first);
}

TEST_CASE("malformed and unsupported queries") {
    auto zone = Fixture().zone();
    Message q = query("web.default.svc.cluster.local", type::kA);

    Message notify = q;
    notify.header.opcode = 4;
    CHECK(resolve(zone.get(), notify, {}).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kNotImp));

    Message two = q;
    two.questions.push_back(q.questions[0]);
    CHECK(resolve(zone.get(), two, {}).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kFormErr));

    Message none = q;
    none.questions.clear();
    CHECK(resolve(zone.get(), none, {}).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kFormErr));

    Message response = q;
    response.header.qr = true;
    CHECK(resolve(zone.get(), response, {}).kind == Resolution::Kind::kDrop);

    Message chaos = q;
    chaos.questions[0].qclass = 3;
    CHECK(resolve(zone.get(), chaos, {}).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kRefused));

    Message axfr = query("cluster.local", type::kAXFR);
    CHECK(resolve(zone.get(), axfr, {}).response.header.rcode ==
          static_cast<uint8_t>(Rcode::kRefused));

    Message badvers = q;
    badvers.edns = Edns{};
    badvers.edns->version = 1;
    Resolution r = resolve(zone.get(), badvers, {});
    finish_reply(badvers, r.response);
    REQUIRE(r.response.edns.has_value());
    CHECK(r.response.edns->extended_rcode == 1);
    CHECK(r.response.header.rcode == 0);
}

TEST_CASE("finish_reply adds our OPT and picks the UDP size limit") {
    auto zone = Fixture().zone();
    Message q = query("web.default.svc.cluster.local", type::kA);
    Resolution plain = resolve(zone.get(), q, {});
    CHECK(finish_reply(q, plain.response) == 512);
    CHECK_FALSE(plain.response.edns.has_value());

    q.edns = Edns{};
    q.edns->udp_size = 4096;
    q.edns->dnssec_ok = true;
    Resolution with_edns = resolve(zone.get(), q, {});
    CHECK(finish_reply(q, with_edns.response) == kEdnsUdpSize);
    REQUIRE(with_edns.response.edns.has_value());
    CHECK(with_edns.response.edns->udp_size == kEdnsUdpSize);
    CHECK(with_edns.response.edns->dnssec_ok);

    q.edns->udp_size = 100;
    Resolution small = resolve(zone.get(), q, {});
    CHECK(finish_reply(q, small.response) == 512);
}

TEST_CASE("error_reply echoes the header of an unparsable query") {
    std::string packet = {'\x12', '\x34', '\x01', '\x00', 0, 1, 0, 0, 0, 0, 0, 0, '\5', 'a'};
    std::string reply = error_reply(
        {reinterpret_cast<const uint8_t*>(packet.data()), packet.size()}, Rcode::kFormErr);
    auto parsed = parse_message({reinterpret_cast<const uint8_t*>(reply.data()), reply.size()});
    REQUIRE(parsed.ok());
    CHECK(parsed->header.id == 0x1234);
    CHECK(parsed->header.qr);
    CHECK(parsed->header.rcode == static_cast<uint8_t>(Rcode::kFormErr));
    CHECK(parsed->questions.empty());
    CHECK(
        error_reply({reinterpret_cast<const uint8_t*>(packet.data()), 4}, Rcode::kFormErr).empty());
}

TEST_CASE("reverse names and dashed addresses") {
    CHECK(reverse_name(ip("10.96.0.1")) == wire("1.0.96.10.in-addr.arpa"));
    CHECK(name_to_text(reverse_name(ip("2001:db8::1"))) ==
          "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa.");
    CHECK(dashed_address(ip("10.0.0.1")) == "10-0-0-1");
    CHECK(dashed_address(ip("fd00::1")) == "fd00--1");
    CHECK(*parse_dashed_address("10-0-0-1") == ip("10.0.0.1"));
    CHECK(*parse_dashed_address("fd00--1") == ip("fd00::1"));
    CHECK_FALSE(parse_dashed_address("10-0-0").ok());
    CHECK_FALSE(parse_dashed_address("web-0").ok());
}

TEST_CASE("the zone is rebuilt from a new snapshot with the generation as serial") {
    Fixture f;
    auto before = f.zone();
    f.snapshot.remove_service(ObjectKey{"default", "web"}).generation(43);
    auto after = f.zone();
    CHECK(rcode(ask(*before, "web.default.svc.cluster.local", type::kA)) == Rcode::kNoError);
    CHECK(rcode(ask(*after, "web.default.svc.cluster.local", type::kA)) == Rcode::kNXDomain);
    CHECK(after->serial() == 43);
}

namespace {

Resolution ask_with(const Zone& zone, const std::string& name, uint16_t qtype,
                    const ResolverOptions& options) {
    return resolve(&zone, query(name, qtype), options);
}

ZoneSet zone_set(std::vector<std::string> texts) {
    ZoneSet set;
    for (const auto& t : texts) set.zones.push_back(wire(t));
    return set;
}

}  // namespace

TEST_CASE("kubernetes fallthrough: NXDOMAIN names of its zones are forwarded") {
    auto zone = Fixture().zone();
    ClusterPolicy policy;
    policy.fallthrough = zone_set({"cluster.local"});
    ResolverOptions options{true, &policy};
    auto missing = ask_with(*zone, "nope.default.svc.cluster.local", type::kA, options);
    CHECK(missing.kind == Resolution::Kind::kForward);
    CHECK(missing.forward == Question{wire("nope.default.svc.cluster.local"), type::kA, kClassIN});
    CHECK(missing.response.answers.empty());
    CHECK(missing.response.authority.empty());
    CHECK_FALSE(missing.response.header.aa);
    // NODATA is not NXDOMAIN: it stays authoritative.
    auto nodata = ask_with(*zone, "web.default.svc.cluster.local", type::kMX, options);
    CHECK(nodata.kind == Resolution::Kind::kReply);
    CHECK(rcode(nodata) == Rcode::kNoError);
    // Without upstreams a fallen-through name is like any outside name.
    options.forwarding = false;
    CHECK(rcode(ask_with(*zone, "nope.default.svc.cluster.local", type::kA, options)) ==
          Rcode::kRefused);
}

TEST_CASE("kubernetes fallthrough limited to some zones: others keep the NXDOMAIN") {
    auto zone = Fixture().zone();
    ClusterPolicy policy;
    policy.fallthrough = zone_set({"other.svc.cluster.local"});
    ResolverOptions options{true, &policy};
    CHECK(ask_with(*zone, "x.other.svc.cluster.local", type::kA, options).kind ==
          Resolution::Kind::kForward);
    auto r = ask_with(*zone, "nope.default.svc.cluster.local", type::kA, options);
    CHECK(r.kind == Resolution::Kind::kReply);
    CHECK(rcode(r) == Rcode::kNXDomain);
    check_soa_authority(r);
}

TEST_CASE("kubernetes reverse zones without fallthrough: unknown PTRs are authoritative NXDOMAIN") {
    auto zone = Fixture().zone();
    ClusterPolicy policy;
    policy.reverse_zones = all_reverse_zones();
    policy.fallthrough = {};
    ResolverOptions options{true, &policy};
    auto known = ask_with(*zone, "10.0.96.10.in-addr.arpa", type::kPTR, options);
    REQUIRE(known.response.answers.size() == 1);
    auto unknown = ask_with(*zone, "3.0.0.10.in-addr.arpa", type::kPTR, options);
    CHECK(unknown.kind == Resolution::Kind::kReply);
    CHECK(rcode(unknown) == Rcode::kNXDomain);
    CHECK(unknown.response.header.aa);
    REQUIRE(unknown.response.authority.size() == 1);
    CHECK(unknown.response.authority[0].name == wire("in-addr.arpa"));
    CHECK(unknown.response.authority[0].rdata == rdata_soa(wire("ns.dns.in-addr.arpa"),
                                                           wire("hostmaster.in-addr.arpa"), 42,
                                                           7200, 1800, 86400, 30));
}

TEST_CASE("kubernetes without reverse zones: PTRs of the cluster are forwarded") {
    auto zone = Fixture().zone();
    ClusterPolicy policy;
    policy.reverse_zones = {};
    policy.fallthrough = {};
    ResolverOptions options{true, &policy};
    CHECK(ask_with(*zone, "10.0.96.10.in-addr.arpa", type::kPTR, options).kind ==
          Resolution::Kind::kForward);
    // A narrower reverse zone: only its names are the cluster's.
    policy.reverse_zones = zone_set({"96.10.in-addr.arpa"});
    CHECK(ask_with(*zone, "10.0.96.10.in-addr.arpa", type::kPTR, options).response.answers.size() ==
          1);
    CHECK(ask_with(*zone, "1.0.0.10.in-addr.arpa", type::kPTR, options).kind ==
          Resolution::Kind::kForward);
}

TEST_CASE("hosts is asked before the cluster zone and forwarding") {
    auto zone = Fixture().zone();
    HostsOptions hosts_options;
    hosts_options.zones = zone_set({"."});
    hosts_options.ttl = 60;
    hosts_options.inline_mappings = {{ip("192.0.2.7"), wire("web.default.svc.cluster.local")},
                                     {ip("192.0.2.8"), wire("node1")}};
    auto strict = HostsTable::build(hosts_options, {});
    ResolverOptions options{true, nullptr, strict.get()};
    auto web = ask_with(*zone, "web.default.svc.cluster.local", type::kA, options);
    CHECK(addresses(web.response.answers) == std::vector<std::string>{"192.0.2.7"});
    CHECK(web.response.header.aa);
    CHECK(web.response.answers[0].ttl == 60);
    auto node = ask_with(*zone, "node1", type::kA, options);
    CHECK(node.kind == Resolution::Kind::kReply);
    CHECK(addresses(node.response.answers) == std::vector<std::string>{"192.0.2.8"});
    // Not in the table, no fallthrough: SERVFAIL, as CoreDNS's hosts.
    CHECK(rcode(ask_with(*zone, "www.example.com", type::kA, options)) == Rcode::kServFail);
    CHECK(rcode(ask_with(*zone, "nginx.default.svc.cluster.local", type::kA, options)) ==
          Rcode::kServFail);

    hosts_options.fallthrough = hosts_options.zones;
    auto lenient = HostsTable::build(hosts_options, {});
    options.hosts = lenient.get();
    CHECK(ask_with(*zone, "www.example.com", type::kA, options).kind == Resolution::Kind::kForward);
    CHECK(addresses(ask_with(*zone, "nginx.default.svc.cluster.local", type::kA, options)
                        .response.answers) ==
          std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.4"});
    auto ptr = ask_with(*zone, "8.2.0.192.in-addr.arpa", type::kPTR, options);
    REQUIRE(ptr.response.answers.size() == 1);
    CHECK(ptr.response.answers[0].rdata == wire("node1"));
}

TEST_CASE("endpoint_pod_names: endpoints without hostname are named after their Pod") {
    Fixture f;
    EndpointSlice slice;
    slice.meta = {"default", "nginx-odd", "", {}, {}};
    slice.service_name = "nginx";
    slice.endpoints = {endpoint("10.0.0.5", "", true, "has.dots")};
    f.add(slice);
    ZoneConfig config;
    config.endpoint_pod_names = true;
    auto zone = *Zone::build(*f.snapshot.build(), config);
    auto pod = ask(*zone, "other.nginx.default.svc.cluster.local", type::kA);
    CHECK(addresses(pod.response.answers) == std::vector<std::string>{"10.0.0.4"});
    CHECK(rcode(ask(*zone, "10-0-0-4.nginx.default.svc.cluster.local", type::kA)) ==
          Rcode::kNXDomain);
    // A hostname still wins; a Pod name that is no DNS label keeps the dashed address.
    CHECK(
        addresses(ask(*zone, "web-0.nginx.default.svc.cluster.local", type::kA).response.answers) ==
        std::vector<std::string>{"10.0.0.1"});
    CHECK(addresses(
              ask(*zone, "10-0-0-5.nginx.default.svc.cluster.local", type::kA).response.answers) ==
          std::vector<std::string>{"10.0.0.5"});
    auto ptr = ask(*zone, "4.0.0.10.in-addr.arpa", type::kPTR);
    REQUIRE(ptr.response.answers.size() == 1);
    CHECK(ptr.response.answers[0].rdata == wire("other.nginx.default.svc.cluster.local"));
}

TEST_CASE("noendpoints: headless Services and endpoint names do not exist; ClusterIPs do") {
    ZoneConfig config;
    config.endpoints = false;
    auto zone = *Zone::build(*Fixture().snapshot.build(), config);
    CHECK(rcode(ask(*zone, "nginx.default.svc.cluster.local", type::kA)) == Rcode::kNXDomain);
    CHECK(rcode(ask(*zone, "web-0.nginx.default.svc.cluster.local", type::kA)) == Rcode::kNXDomain);
    CHECK(rcode(ask(*zone, "_http._tcp.nginx.default.svc.cluster.local", type::kSRV)) ==
          Rcode::kNXDomain);
    CHECK(ask(*zone, "1.0.0.10.in-addr.arpa", type::kPTR).response.answers.empty());
    CHECK(addresses(ask(*zone, "web.default.svc.cluster.local", type::kA).response.answers) ==
          std::vector<std::string>{"10.96.0.10"});
}
