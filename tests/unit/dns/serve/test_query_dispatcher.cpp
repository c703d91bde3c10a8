// A serving thread's query dispatch with no socket (dns/serve/query_dispatcher.h):
// zone replies, the rendered-reply cache and its flush on a new zone, the
// replies the server writes itself, the counters, and the server-side
// search path (autopath) with a real forwarder asking fake upstreams.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <catch.hpp>

#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dns/serve/query_dispatcher.h"
#include "tests/unit/dns/test_forward_fakes.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::shared_ptr<const Zone> empty_zone(bool synced) {
    return *Zone::build(*watch::SnapshotBuilder().synced(synced).build(), ZoneConfig{});
}

std::string query_bytes(uint16_t id, const char* name, uint16_t qtype) {
    Message q;
    q.header.id = id;
    q.header.rd = true;
    q.questions.push_back({*name_from_text(name), qtype, kClassIN});
    return write_message(q).bytes;
}

Message parse(const std::string& bytes) {
    auto parsed = parse_message({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    REQUIRE(parsed.ok());
    return *parsed;
}

// Records what is posted; with no engine published nothing is forwarded.
struct RecordingSink final : ReplySink {
    std::vector<std::pair<ClientRef, std::string>> posted;
    void post(ClientRef client, std::string reply) override {
        posted.emplace_back(std::move(client), std::move(reply));
    }
};

ClientRef ipv4_client() {
    ClientRef client;
    client.address.ss_family = AF_INET;
    client.address_length = sizeof(sockaddr_in);
    return client;
}

uint64_t get(const std::atomic<uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
}

struct Dispatch {
    ServerOptions options;
    ZoneHolder zones;
    EngineHolder engines;  // none published: no upstreams
    RecordingSink sink;
    QueryDispatcher dispatcher{options, zones, engines, sink};

    explicit Dispatch(bool synced) { zones.publish(empty_zone(synced)); }

    // The outcome, and the reply when there is one.
    std::pair<QueryDispatcher::Outcome, std::string> ask(const std::string& packet,
                                                         Proto proto = kUdp) {
        dispatcher.refresh_zone();
        std::string reply;
        auto outcome = dispatcher.handle(reinterpret_cast<const uint8_t*>(packet.data()),
                                         packet.size(), proto, ipv4_client(), reply);
        return {outcome, reply};
    }
};

}  // namespace

TEST_CASE("query dispatcher: a zone reply, then the same question from the rendered cache") {
    Dispatch d(true);
    auto [first_outcome, first] = d.ask(query_bytes(1, "dns-version.cluster.local", type::kTXT));
    REQUIRE(first_outcome == QueryDispatcher::Outcome::kReply);
    Message reply = parse(first);
    CHECK(reply.header.id == 1);
    CHECK(reply.header.rcode == 0);
    REQUIRE(reply.answers.size() == 1);
    CHECK(reply.answers[0].rtype == type::kTXT);
    CHECK(get(d.dispatcher.stats().render_hits) == 0);

    // Another ID and case: the cached reply is patched to this query.
    auto [second_outcome, second] = d.ask(query_bytes(2, "DNS-Version.Cluster.Local", type::kTXT));
    REQUIRE(second_outcome == QueryDispatcher::Outcome::kReply);
    CHECK(get(d.dispatcher.stats().render_hits) == 1);
    Message cached = parse(second);
    CHECK(cached.header.id == 2);
    CHECK(cached.questions.at(0).name == *name_from_text("DNS-Version.Cluster.Local"));
    CHECK(cached.answers ==
          std::vector<Record>{Record{cached.questions[0].name, type::kTXT, kClassIN,
                                     reply.answers[0].ttl, reply.answers[0].rdata}});
    CHECK(get(d.dispatcher.stats().requests[kUdp][0][ServerStats::type_index(type::kTXT)]) == 2);
    CHECK(get(d.dispatcher.stats().responses[ServerStats::kKubernetes][0]) == 2);
}

TEST_CASE("query dispatcher: a newly published zone is served, not the rendered reply") {
    Dispatch d(true);
    const std::string packet = query_bytes(7, "dns-version.cluster.local", type::kTXT);
    REQUIRE(parse(d.ask(packet).second).header.rcode == 0);
    d.zones.publish(empty_zone(false));  // not synced: cluster names get SERVFAIL
    auto [outcome, bytes] = d.ask(packet);
    REQUIRE(outcome == QueryDispatcher::Outcome::kReply);
    CHECK(parse(bytes).header.rcode == static_cast<uint8_t>(Rcode::kServFail));
    CHECK(get(d.dispatcher.stats().render_hits) == 0);
}

TEST_CASE("query dispatcher: what the server answers itself, and what it drops") {
    Dispatch d(true);
    SECTION("another zone without upstreams: REFUSED, never forwarded") {
        auto [outcome, bytes] = d.ask(query_bytes(3, "example.org", type::kA), kTcp);
        REQUIRE(outcome == QueryDispatcher::Outcome::kReply);
        CHECK(parse(bytes).header.rcode == static_cast<uint8_t>(Rcode::kRefused));
        CHECK(d.sink.posted.empty());
        CHECK(get(d.dispatcher.stats().requests[kTcp][0][ServerStats::type_index(type::kA)]) == 1);
    }
    SECTION("a header with trailing garbage: FORMERR") {
        std::string packet = query_bytes(4, "dns-version.cluster.local", type::kTXT) + "xx";
        auto [outcome, bytes] = d.ask(packet);
        REQUIRE(outcome == QueryDispatcher::Outcome::kReply);
        Message reply = parse(bytes);
        CHECK(reply.header.id == 4);
        CHECK(reply.header.rcode == static_cast<uint8_t>(Rcode::kFormErr));
        CHECK(get(d.dispatcher.stats().responses[ServerStats::kServerItself][1]) == 1);
    }
    SECTION("shorter than a header: no reply, counted as dropped") {
        auto [outcome, bytes] = d.ask(std::string("\x01\x02\x03", 3));
        CHECK(outcome == QueryDispatcher::Outcome::kNone);
        CHECK(get(d.dispatcher.stats().dropped) == 1);
    }
    SECTION("a reply (QR set) is dropped: two servers cannot loop") {
        std::string packet = query_bytes(5, "dns-version.cluster.local", type::kTXT);
        packet[2] = static_cast<char>(packet[2] | 0x80);
        auto [outcome, bytes] = d.ask(packet);
        CHECK(outcome == QueryDispatcher::Outcome::kNone);
        CHECK(get(d.dispatcher.stats().dropped) == 1);
    }
}

// --- the server-side search path (autopath)

namespace {

std::string wire(const char* text) {
    return *name_from_text(text);
}

watch::Service cluster_service(const char* ns, const char* name, const char* address) {
    watch::Service s;
    s.meta.ns = ns;
    s.meta.name = name;
    s.cluster_ips = {*IpAddress::parse(address)};
    s.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    return s;
}

std::shared_ptr<const Zone> cluster_zone() {
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true).generation(7);
    snapshot.add(cluster_service("default", "kubernetes", "10.96.0.1"));
    snapshot.add(cluster_service("a", "db", "10.96.1.1"));
    snapshot.add(cluster_service("b", "db", "10.96.2.2"));
    return *Zone::build(*snapshot.build(), ZoneConfig{});
}

watch::Pod node_pod(const char* ns, const char* name, const char* address) {
    watch::Pod p;
    p.meta.ns = ns;
    p.meta.name = name;
    p.node_name = "node-a";
    p.phase = watch::PodPhase::kRunning;
    p.pod_ips = {*IpAddress::parse(address)};
    return p;
}

ClientRef client_at(const char* address, uint16_t port = 40000) {
    ClientRef client;
    auto* in = reinterpret_cast<sockaddr_in*>(&client.address);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    REQUIRE(::inet_pton(AF_INET, address, &in->sin_addr) == 1);
    client.address_length = sizeof(sockaddr_in);
    return client;
}

// Collects what forward callbacks post, from the forwarder's thread.
struct WaitingSink final : ReplySink {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::pair<ClientRef, std::string>> posted;
    void post(ClientRef client, std::string reply) override {
        std::lock_guard lock(mutex);
        posted.emplace_back(std::move(client), std::move(reply));
        cv.notify_all();
    }
    // The next posted reply (5 s at most).
    std::string next() {
        std::unique_lock lock(mutex);
        REQUIRE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return !posted.empty(); }));
        std::string reply = std::move(posted.front().second);
        posted.erase(posted.begin());
        return reply;
    }
    size_t count() {
        std::lock_guard lock(mutex);
        return posted.size();
    }
};

// A Pod of namespace `a` at 10.244.1.5 (default search path), one with a
// search list of its own at 10.244.1.6, a node resolv.conf searching
// corp.example, and a forwarder (with the flags path's cache when `cached`)
// to a fake upstream.
struct AutopathDispatch {
    testing::FakeUpstream upstream;
    ServerOptions options;
    ZoneHolder zones;
    EngineHolder engines;
    PodDirectoryHolder pods;
    WaitingSink sink;
    QueryDispatcher dispatcher{options, zones, engines, sink};

    explicit AutopathDispatch(bool enabled = true, bool cached = false) {
        options.pods = &pods;
        zones.publish(cluster_zone());
        auto engine = std::make_shared<QueryEngine>();
        ForwarderOptions forward;
        forward.upstreams = {upstream.address};
        engine->forwarder = std::make_unique<Forwarder>(forward);
        REQUIRE(engine->forwarder->start().ok());
        if (cached) engine->caches = CacheSet::flags_default();
        engine->autopath.enabled = enabled;
        engine->autopath.node_searches = {wire("corp.example")};
        engines.publish(std::move(engine));
        watch::Pod default_pod = node_pod("a", "client", "10.244.1.5");
        watch::Pod custom = node_pod("a", "custom", "10.244.1.6");
        custom.dns_config = watch::PodDnsConfig{{}, {"a.svc.cluster.local", "corp.example"}, {}};
        pods.publish(PodDirectory::build({&default_pod, &custom}, "node-a"));
    }
    ~AutopathDispatch() { engines.get()->forwarder->stop(); }

    std::pair<QueryDispatcher::Outcome, std::string> ask(const std::string& packet,
                                                         const ClientRef& client,
                                                         Proto proto = kUdp) {
        dispatcher.refresh_zone();
        std::string reply;
        auto outcome = dispatcher.handle(reinterpret_cast<const uint8_t*>(packet.data()),
                                         packet.size(), proto, client, reply);
        return {outcome, reply};
    }
    // A reply from the zone, made now.
    Message zone_reply(const char* name, uint16_t qtype, const ClientRef& client) {
        auto [outcome, bytes] = ask(query_bytes(1, name, qtype), client);
        REQUIRE(outcome == QueryDispatcher::Outcome::kReply);
        return parse(bytes);
    }
    // Answers the upstream's next query with `rcode` and, for NOERROR, one
    // A record; returns the name it was asked.
    std::string answer_upstream(Rcode rcode, const char* address = "192.0.2.7") {
        Message query = upstream.receive();
        Message reply = query;
        reply.header.qr = true;
        reply.header.rcode = static_cast<uint8_t>(rcode);
        if (rcode == Rcode::kNoError) {
            reply.answers.push_back(Record{query.questions[0].name, type::kA, kClassIN, 120,
                                           rdata_address(*IpAddress::parse(address))});
        }
        upstream.send(reply);
        return name_to_text(name_lower(query.questions[0].name));
    }
    uint64_t answered() const { return get(dispatcher.stats().autopath_answers); }
    uint64_t saved() const { return get(dispatcher.stats().autopath_round_trips_saved); }
};

const char* const kPodAddress = "10.244.1.5";

}  // namespace

TEST_CASE("autopath: a cluster short name answers from another part of the path at once") {
    AutopathDispatch d;
    // glibc's first expansion of `kubernetes.default` in a Pod of `a`.
    Message reply =
        d.zone_reply("Kubernetes.Default.a.svc.cluster.local", type::kA, client_at(kPodAddress));
    CHECK(reply.header.rcode == 0);
    CHECK(reply.questions.at(0).name == wire("Kubernetes.Default.a.svc.cluster.local"));
    REQUIRE(reply.answers.size() == 2);
    CHECK(reply.answers[0].name == wire("Kubernetes.Default.a.svc.cluster.local"));
    CHECK(reply.answers[0].rtype == type::kCNAME);
    CHECK(reply.answers[0].rdata == wire("kubernetes.default.svc.cluster.local"));
    CHECK(reply.answers[0].ttl == reply.answers[1].ttl);
    CHECK(reply.answers[1].rtype == type::kA);
    CHECK(reply.answers[1].rdata == rdata_address(*IpAddress::parse("10.96.0.1")));
    CHECK(d.answered() == 1);
    CHECK(d.saved() == 1);
    CHECK_FALSE(d.upstream.has_query());

    // Another client's NXDOMAIN for that name is rendered and kept; the Pod
    // still gets its own answer, never the rendered one.
    Message plain =
        d.zone_reply("kubernetes.default.a.svc.cluster.local", type::kA, client_at("10.0.0.9"));
    CHECK(plain.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
    CHECK(parse(d.ask(query_bytes(2, "kubernetes.default.a.svc.cluster.local", type::kA),
                      client_at("10.0.0.9"))
                    .second)
              .header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
    CHECK(get(d.dispatcher.stats().render_hits) == 1);
    Message again =
        d.zone_reply("kubernetes.default.a.svc.cluster.local", type::kA, client_at(kPodAddress));
    CHECK(again.answers.size() == 2);
    CHECK(get(d.dispatcher.stats().render_hits) == 1);
    CHECK(d.answered() == 2);
}

TEST_CASE("autopath: a name the zone has at its first expansion gets the plain answer") {
    AutopathDispatch d;
    Message reply = d.zone_reply("db.a.svc.cluster.local", type::kA, client_at(kPodAddress));
    REQUIRE(reply.answers.size() == 1);
    CHECK(reply.answers[0].rdata == rdata_address(*IpAddress::parse("10.96.1.1")));
    CHECK(d.answered() == 0);
    CHECK(get(d.dispatcher.stats().render_hits) == 0);
    // That reply is every client's: the Pod's next ask, and another
    // client's, are served from the rendered replies.
    Message again = d.zone_reply("db.a.svc.cluster.local", type::kA, client_at(kPodAddress));
    REQUIRE(again.answers.size() == 1);
    CHECK(again.answers[0].rdata == rdata_address(*IpAddress::parse("10.96.1.1")));
    CHECK(get(d.dispatcher.stats().render_hits) == 1);
    CHECK(d.zone_reply("db.a.svc.cluster.local", type::kA, client_at("10.0.0.9")).answers.size() ==
          1);
    CHECK(get(d.dispatcher.stats().render_hits) == 2);
    CHECK(d.answered() == 0);
}

TEST_CASE("autopath: NODATA at a later name is answered with the CNAME and the SOA") {
    AutopathDispatch d;
    Message reply =
        d.zone_reply("kubernetes.default.a.svc.cluster.local", type::kAAAA, client_at(kPodAddress));
    CHECK(reply.header.rcode == 0);
    REQUIRE(reply.answers.size() == 1);
    CHECK(reply.answers[0].rtype == type::kCNAME);
    CHECK(reply.answers[0].rdata == wire("kubernetes.default.svc.cluster.local"));
    REQUIRE(reply.authority.size() == 1);
    CHECK(reply.authority[0].rtype == type::kSOA);
    CHECK(reply.answers[0].ttl == reply.authority[0].ttl);
    CHECK(d.saved() == 1);
}

TEST_CASE("autopath: an external name is walked through the upstream, one name after another") {
    AutopathDispatch d;
    auto proto = GENERATE(kUdp, kTcp);
    auto [outcome, now] = d.ask(query_bytes(9, "api.example.com.a.svc.cluster.local", type::kA),
                                client_at(kPodAddress), proto);
    REQUIRE(outcome == QueryDispatcher::Outcome::kForwarded);
    // The zone's names were NXDOMAIN; the node's search domain, then the name.
    CHECK(d.answer_upstream(Rcode::kNXDomain) == "api.example.com.corp.example.");
    CHECK(d.answer_upstream(Rcode::kNoError) == "api.example.com.");
    Message reply = parse(d.sink.next());
    CHECK(reply.header.id == 9);
    CHECK(reply.header.rcode == 0);
    CHECK(reply.questions.at(0).name == wire("api.example.com.a.svc.cluster.local"));
    REQUIRE(reply.answers.size() == 2);
    CHECK(reply.answers[0].rtype == type::kCNAME);
    CHECK(reply.answers[0].name == wire("api.example.com.a.svc.cluster.local"));
    CHECK(reply.answers[0].rdata == wire("api.example.com"));
    CHECK(reply.answers[1].name == wire("api.example.com"));
    CHECK(reply.answers[1].rdata == rdata_address(*IpAddress::parse("192.0.2.7")));
    CHECK(d.answered() == 1);
    CHECK(d.saved() == 4);  // a.svc..., svc..., cluster.local, corp.example
    CHECK(d.sink.count() == 0);
    CHECK(get(d.dispatcher.stats().forwarded_responses[0]) == 1);
}

TEST_CASE("autopath: a walk again is answered at once from the cache, each name under its own") {
    AutopathDispatch d(true, true);
    const std::string packet = query_bytes(6, "api.example.com.a.svc.cluster.local", type::kA);
    REQUIRE(d.ask(packet, client_at(kPodAddress)).first == QueryDispatcher::Outcome::kForwarded);
    CHECK(d.answer_upstream(Rcode::kNXDomain) == "api.example.com.corp.example.");
    CHECK(d.answer_upstream(Rcode::kNoError) == "api.example.com.");
    CHECK(parse(d.sink.next()).answers.size() == 2);
    // The denial and the answer are cached: the second walk ends now.
    auto [outcome, bytes] = d.ask(packet, client_at(kPodAddress));
    REQUIRE(outcome == QueryDispatcher::Outcome::kReply);
    Message reply = parse(bytes);
    REQUIRE(reply.answers.size() == 2);
    CHECK(reply.answers[0].rdata == wire("api.example.com"));
    CHECK(reply.answers[1].rdata == rdata_address(*IpAddress::parse("192.0.2.7")));
    CHECK_FALSE(d.upstream.has_query());
    CHECK(d.answered() == 2);
    CHECK(get(d.dispatcher.stats().responses[ServerStats::kCache][0]) == 1);
    // Another client asking the bare name gets the cached answer, no CNAME.
    auto [plain_outcome, plain] =
        d.ask(query_bytes(8, "api.example.com", type::kA), client_at("10.0.0.9"));
    REQUIRE(plain_outcome == QueryDispatcher::Outcome::kReply);
    CHECK(parse(plain).answers.size() == 1);
}

TEST_CASE("autopath: a failed step ends the walk with the plain NXDOMAIN") {
    AutopathDispatch d;
    auto [outcome, now] = d.ask(query_bytes(4, "api.example.com.a.svc.cluster.local", type::kA),
                                client_at(kPodAddress));
    REQUIRE(outcome == QueryDispatcher::Outcome::kForwarded);
    CHECK(d.answer_upstream(Rcode::kServFail) == "api.example.com.corp.example.");
    Message reply = parse(d.sink.next());
    CHECK(reply.header.id == 4);
    CHECK(reply.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
    CHECK(reply.answers.empty());
    REQUIRE(reply.authority.size() == 1);
    CHECK(reply.authority[0].rtype == type::kSOA);
    CHECK(d.answered() == 0);
    // The walk stopped: the bare name was never asked.
    CHECK_FALSE(d.upstream.has_query());
}

TEST_CASE("autopath: every name NXDOMAIN: the plain reply, the client walks on") {
    AutopathDispatch d;
    auto [outcome, now] = d.ask(query_bytes(5, "nothing.example.a.svc.cluster.local", type::kA),
                                client_at(kPodAddress));
    REQUIRE(outcome == QueryDispatcher::Outcome::kForwarded);
    CHECK(d.answer_upstream(Rcode::kNXDomain) == "nothing.example.corp.example.");
    CHECK(d.answer_upstream(Rcode::kNXDomain) == "nothing.example.");
    Message reply = parse(d.sink.next());
    CHECK(reply.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
    CHECK(reply.answers.empty());
    CHECK(d.answered() == 0);
}

TEST_CASE("autopath: plain answers for everyone and everything else") {
    auto plain_nxdomain = [](AutopathDispatch& d, const char* name, const ClientRef& client) {
        Message reply = d.zone_reply(name, type::kA, client);
        CHECK(reply.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
        CHECK(reply.answers.empty());
        CHECK_FALSE(d.upstream.has_query());
        CHECK(d.answered() == 0);
    };
    SECTION("an address no Pod of this node has") {
        AutopathDispatch d;
        plain_nxdomain(d, "kubernetes.default.a.svc.cluster.local", client_at("10.244.9.9"));
    }
    SECTION("a Pod with a search list of its own") {
        AutopathDispatch d;
        plain_nxdomain(d, "kubernetes.default.a.svc.cluster.local", client_at("10.244.1.6"));
    }
    SECTION("a name that is not the Pod's first expansion") {
        AutopathDispatch d;
        plain_nxdomain(d, "kubernetes.default.svc.svc.cluster.local", client_at(kPodAddress));
        plain_nxdomain(d, "kubernetes.default.b.svc.cluster.local", client_at(kPodAddress));
    }
    SECTION("the search path off") {
        AutopathDispatch d(false);
        plain_nxdomain(d, "kubernetes.default.a.svc.cluster.local", client_at(kPodAddress));
    }
}
