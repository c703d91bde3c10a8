// TcpStream without sockets: framing over any chunking, the output and
// forward bounds that pause reading, half-close, and the timeouts that only
// complete queries reset.
#include <catch.hpp>

#include <string>
#include <vector>

#include "dns/serve/tcp_stream.h"

using namespace sb::dns;
using Clock = TcpStream::Clock;

namespace {

const Clock::time_point kStart{};

std::string framed(const std::string& payload) {
    std::string out;
    out.push_back(static_cast<char>(payload.size() >> 8));
    out.push_back(static_cast<char>(payload.size() & 0xff));
    return out + payload;
}

// Every query the stream gives now, as strings.
std::vector<std::string> take_all(TcpStream& stream, Clock::time_point now = kStart) {
    std::vector<std::string> out;
    std::span<const uint8_t> query;
    while (stream.next_query(now, query)) {
        out.emplace_back(reinterpret_cast<const char*>(query.data()), query.size());
    }
    return out;
}

}  // namespace

TEST_CASE("tcp stream: frames come out whole whatever the chunking") {
    const std::string bytes = framed("first") + framed("") + framed(std::string(300, 'x'));
    for (size_t chunk : {1u, 2u, 3u, 7u, 400u}) {
        TcpStream stream(kStart);
        std::vector<std::string> queries;
        for (size_t at = 0; at < bytes.size(); at += chunk) {
            REQUIRE(stream.read_room() > 0);
            stream.received(std::string_view(bytes).substr(at, chunk));
            for (auto& query : take_all(stream)) queries.push_back(query);
        }
        CHECK(queries == std::vector<std::string>{"first", "", std::string(300, 'x')});
    }
}

TEST_CASE("tcp stream: input holds at most one largest frame") {
    TcpStream stream(kStart);
    std::string header = "\xff\xff";
    stream.received(header);
    CHECK(stream.read_room() == TcpStream::kMaxFrame - 2);
    stream.received(std::string(TcpStream::kMaxFrame, 'a'));  // more than the room
    CHECK(stream.read_room() == 0);
    auto queries = take_all(stream);
    REQUIRE(queries.size() == 1);
    CHECK(queries[0].size() == 65535);
    CHECK(stream.read_room() == TcpStream::kMaxFrame);
}

TEST_CASE("tcp stream: unsent replies over the bound pause reading and answering") {
    TcpStream stream(kStart);
    std::string queries;
    for (int i = 0; i < 100; ++i) queries += framed("q");
    stream.received(queries);
    const std::string reply(4000, 'r');
    size_t answered = 0;
    std::span<const uint8_t> query;
    while (stream.next_query(kStart, query)) {
        stream.queue_reply(reply);
        ++answered;
    }
    // Answering stops once the bound is reached, one reply past it at most.
    CHECK(answered == TcpStream::kOutputBound / (reply.size() + 2) + 1);
    CHECK(stream.unsent().size() < TcpStream::kOutputBound + TcpStream::kMaxFrame);
    CHECK(stream.read_room() == 0);
    stream.sent(stream.unsent().size());
    CHECK(stream.read_room() > 0);
    CHECK(take_all(stream).size() == 100 - answered);
}

TEST_CASE("tcp stream: too many pending forwards pause reading until one is answered") {
    TcpStream stream(kStart);
    std::string queries;
    for (unsigned i = 0; i <= TcpStream::kMaxPendingForwards; ++i) queries += framed("q");
    stream.received(queries);
    std::span<const uint8_t> query;
    unsigned forwarded = 0;
    while (stream.next_query(kStart, query)) {
        stream.forwarded();
        ++forwarded;
    }
    CHECK(forwarded == TcpStream::kMaxPendingForwards);
    CHECK(stream.read_room() == 0);
    stream.forward_done();
    stream.queue_reply("a");
    CHECK(stream.read_room() > 0);
    CHECK(take_all(stream).size() == 1);
}

TEST_CASE("tcp stream: a half-closed peer gets its replies, then the stream is finished") {
    TcpStream stream(kStart);
    stream.received(framed("q1") + framed("q2") + std::string(1, '\0'));  // a partial third
    stream.received_end();
    CHECK(stream.read_room() == 0);
    CHECK_FALSE(stream.finished());
    std::span<const uint8_t> query;
    REQUIRE(stream.next_query(kStart, query));
    stream.queue_reply("r1");
    REQUIRE(stream.next_query(kStart, query));
    stream.forwarded();
    CHECK_FALSE(stream.finished());  // r1 unsent, q2 upstream
    stream.sent(stream.unsent().size());
    CHECK_FALSE(stream.finished());
    stream.forward_done();
    stream.queue_reply("r2");
    CHECK_FALSE(stream.finished());
    CHECK(stream.unsent() == framed("r2"));
    stream.sent(1);
    stream.sent(3);
    CHECK(stream.finished());  // the partial frame is never answered
}

TEST_CASE("tcp stream: only complete queries reset the timeout") {
    using std::chrono::seconds;
    TcpStream stream(kStart);
    const auto read = seconds(3);
    const auto idle = seconds(10);
    CHECK_FALSE(stream.timed_out(kStart + seconds(2), read, idle));
    const std::string query = framed("query");
    // One byte a second: the read timeout still runs from the start.
    for (int i = 0; i < 3; ++i) stream.received(query.substr(i, 1));
    CHECK(take_all(stream, kStart + seconds(3)).empty());
    CHECK(stream.timed_out(kStart + seconds(3), read, idle));
    stream.received(query.substr(3));
    CHECK(take_all(stream, kStart + seconds(4)).size() == 1);
    // After a query, the idle timeout from it.
    CHECK_FALSE(stream.timed_out(kStart + seconds(13), read, idle));
    CHECK(stream.timed_out(kStart + seconds(14), read, idle));
    // Never while a forward is pending.
    stream.forwarded();
    CHECK_FALSE(stream.timed_out(kStart + seconds(100), read, idle));
}

TEST_CASE("tcp stream: a reply over 65535 bytes is refused") {
    TcpStream stream(kStart);
    CHECK_FALSE(stream.queue_reply(std::string(65536, 'x')));
    CHECK(stream.unsent().empty());
    CHECK(stream.queue_reply(std::string(65535, 'x')));
    CHECK(stream.unsent().size() == TcpStream::kMaxFrame);
}
