// The pieces of the watch client that need no server: line splitting of a
// chunked stream, backoff and Retry-After, tuning knobs.
#include <catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "watch/kube/backoff.h"
#include "watch/kube/kube_source.h"
#include "watch/kube/line_splitter.h"

using namespace sb::watch::kube;

namespace {

std::vector<std::string> split(LineSplitter& splitter, const std::vector<std::string>& pieces) {
    std::vector<std::string> lines;
    for (const auto& piece : pieces) {
        splitter.feed(piece, [&](std::string_view line) { lines.emplace_back(line); });
    }
    return lines;
}

}  // namespace

TEST_CASE("line splitter: events split across chunks and several in one chunk") {
    LineSplitter splitter;
    auto lines =
        split(splitter, {"{\"a\":1}\n{\"b\"", ":2}\n{\"c\":3}\n{\"d\"", ":", "4}\r\n", "\n"});
    REQUIRE(lines == std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}"});
    CHECK(splitter.buffered() == 0);
}

TEST_CASE("line splitter: byte-by-byte delivery gives the same lines") {
    std::string text = "first line\nsecond\n\nthird\n";
    LineSplitter splitter;
    std::vector<std::string> pieces;
    for (char c : text) pieces.emplace_back(1, c);
    CHECK(split(splitter, pieces) == std::vector<std::string>{"first line", "second", "third"});
}

TEST_CASE("line splitter: a partial line stays buffered until its newline; reset drops it") {
    LineSplitter splitter;
    CHECK(split(splitter, {"{\"cut"}).empty());
    CHECK(splitter.buffered() == 5);
    splitter.reset();
    CHECK(split(splitter, {"ok\n"}) == std::vector<std::string>{"ok"});
}

TEST_CASE("line splitter: an oversized line is dropped and the next line survives") {
    LineSplitter splitter(8);
    auto lines = split(splitter, {"short\n0123456", "789abcdef", "more\nafter\n"});
    CHECK(lines == std::vector<std::string>{"short", "after"});
    CHECK(splitter.oversized() == 1);
}

TEST_CASE("line splitter: an oversized line is dropped when it arrives in one chunk too") {
    // Found by tests/fuzz/line_splitter_fuzz.cpp: a line over the limit that
    // arrived whole in one read was passed on, the same line cut across two
    // reads was dropped.
    for (const auto& pieces :
         std::vector<std::vector<std::string>>{{"0123456789\nok\n"}, {"01234", "56789\nok\n"}}) {
        LineSplitter splitter(8);
        CHECK(split(splitter, pieces) == std::vector<std::string>{"ok"});
        CHECK(splitter.oversized() == 1);
    }
}

TEST_CASE("backoff doubles from the initial delay up to the cap") {
    BackoffParams params{Millis(500), Millis(30000)};
    CHECK(Backoff::nominal(params, 0) == Millis(500));
    CHECK(Backoff::nominal(params, 1) == Millis(1000));
    CHECK(Backoff::nominal(params, 5) == Millis(16000));
    CHECK(Backoff::nominal(params, 6) == Millis(30000));
    CHECK(Backoff::nominal(params, 1000) == Millis(30000));
}

TEST_CASE("a watch that ends within a second with no event counts as a failure") {
    CHECK(watch_counts_as_failure(Millis(0), 0));
    CHECK(watch_counts_as_failure(Millis(999), 0));
    // Lasted a second, or delivered something: a normal end, which resets.
    CHECK_FALSE(watch_counts_as_failure(Millis(1000), 0));
    CHECK_FALSE(watch_counts_as_failure(Millis(60000), 0));
    CHECK_FALSE(watch_counts_as_failure(Millis(10), 1));
}

TEST_CASE("jitter spreads a delay over its upper half") {
    CHECK(Backoff::jittered(Millis(1000), 0.0) == Millis(500));
    CHECK(Backoff::jittered(Millis(1000), 0.5) == Millis(750));
    CHECK(Backoff::jittered(Millis(1000), 0.999) == Millis(999));
    Backoff backoff(BackoffParams{Millis(100), Millis(30000)}, 42);
    const std::chrono::steady_clock::time_point now{};
    for (unsigned failure = 0; failure < 20; ++failure) {
        Millis nominal = Backoff::nominal(BackoffParams{Millis(100), Millis(30000)}, failure);
        Millis delay = backoff.next(now);
        CHECK(delay >= nominal / 2);
        CHECK(delay <= nominal);
        CHECK(delay <= Millis(30000));
    }
    CHECK(backoff.failures() == 20);
    backoff.reset();
    CHECK(backoff.next(now) <= Millis(100));
}

TEST_CASE("a failure more than two minutes after the previous one starts the backoff over") {
    Backoff backoff(BackoffParams{Millis(500), Millis(30000)}, 42);
    std::chrono::steady_clock::time_point now{};
    for (int i = 0; i < 4; ++i) backoff.next(now);
    CHECK(backoff.failures() == 4);
    // Exactly the reset duration later is not more than it (client-go's `>`).
    now += std::chrono::minutes(2);
    backoff.next(now);
    CHECK(backoff.failures() == 5);
    now += std::chrono::minutes(2) + Millis(1);
    Millis delay = backoff.next(now);
    CHECK(backoff.failures() == 1);
    CHECK(delay >= Millis(250));
    CHECK(delay <= Millis(500));
}

TEST_CASE("a watch is healthy once it delivered something and lasted ten seconds") {
    CHECK(watch_was_healthy(Millis(10000), 1));
    CHECK(watch_was_healthy(std::chrono::minutes(5), 100));
    CHECK_FALSE(watch_was_healthy(Millis(9999), 100));           // failed fast, even with events
    CHECK_FALSE(watch_was_healthy(std::chrono::minutes(5), 0));  // silent: the 2 minutes decide
}

TEST_CASE("random watch timeouts stay inside the range") {
    Backoff random(BackoffParams{}, 7);
    bool low = false;
    bool high = false;
    for (int i = 0; i < 2000; ++i) {
        int value = random.uniform(300, 600);
        REQUIRE(value >= 300);
        REQUIRE(value <= 600);
        low |= value < 350;
        high |= value > 550;
    }
    CHECK(low);
    CHECK(high);
}

TEST_CASE("Retry-After: delta seconds, capped; anything else is ignored") {
    CHECK(parse_retry_after("3") == Millis(3000));
    CHECK(parse_retry_after(" 1 ") == Millis(1000));
    CHECK(parse_retry_after("0") == Millis(0));
    CHECK(parse_retry_after("86400") == Millis(300000));
    CHECK_FALSE(parse_retry_after("").has_value());
    CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT").has_value());
    CHECK_FALSE(parse_retry_after("-1").has_value());
}

TEST_CASE("tuning knobs parse and reject unknown keys") {
    auto tuning = parse_tuning("watch_timeout_min_s=2,watch_timeout_max_s=4,backoff_cap_ms=800");
    REQUIRE(tuning.ok());
    CHECK(tuning->watch_timeout_min_s == 2);
    CHECK(tuning->watch_timeout_max_s == 4);
    CHECK(tuning->backoff_cap_ms == 800);
    CHECK(tuning->list_limit == 500);
    CHECK(parse_tuning("").ok());
    CHECK(parse_tuning("bogus=1").error().message.find("bogus") != std::string::npos);
    CHECK_FALSE(parse_tuning("list_limit=0").ok());
    CHECK_FALSE(parse_tuning("list_limit=x").ok());
    CHECK_FALSE(parse_tuning("watch_timeout_min_s=9,watch_timeout_max_s=3").ok());
}

TEST_CASE("KubeSource::create: a bad kubeconfig is kInvalidArgument naming the file") {
    sb::watch::Store store;
    KubeSourceOptions options;
    options.kubeconfig = "/nonexistent/switchboard-kubeconfig";
    auto source = KubeSource::create(options, store);
    REQUIRE_FALSE(source.ok());
    CHECK(source.error().code == sb::ErrorCode::kInvalidArgument);
    CHECK(source.error().message.find("/nonexistent/switchboard-kubeconfig") != std::string::npos);

    options.kubeconfig.clear();
    options.master = "ftp://example";
    options.service_account_dir = "/nonexistent";
    auto bad_master = KubeSource::create(options, store);
    REQUIRE_FALSE(bad_master.ok());
    CHECK(bad_master.error().message.find("--master") != std::string::npos);
}

TEST_CASE("KubeSource against an unreachable server: not ready, store not synced, stop is prompt") {
    sb::watch::Store store;
    KubeSourceOptions options;
    options.master = "https://127.0.0.1:1";
    options.service_account_dir = "/nonexistent";
    options.tuning = KubeTuning{};
    options.tuning->backoff_initial_ms = 10;
    auto source = KubeSource::create(options, store);
    REQUIRE(source.ok());
    (*source)->start();
    CHECK_FALSE((*source)->ready());
    (*source)->stop();
    (*source)->stop();
    CHECK_FALSE(store.snapshot()->synced());
    sb::metrics::TextWriter writer;
    (*source)->append_metrics(writer);
    const std::string metrics = writer.text();
    CHECK(metrics.find("switchboard_apiserver_ready 0") != std::string::npos);
}
