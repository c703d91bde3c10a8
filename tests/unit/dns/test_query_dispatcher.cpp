// A serving thread's query dispatch with no socket (dns/query_dispatcher.h):
// zone replies, the rendered-reply cache and its flush on a new zone, the
// replies the server writes itself, and the counters.
#include <netinet/in.h>
#include <catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "dns/query_dispatcher.h"
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
