// The reload plugin's checks without a thread: what counts as a change, a
// bad Corefile kept out and counted once, the end of checks without
// `reload`, and the metrics CoreDNS exports.
#include <catch.hpp>

#include "proxy/app/corefile_reload.h"

using namespace sb;
using namespace sb::proxy;

namespace {

constexpr const char* kRunning = ".:53 {\n    kubernetes cluster.local\n    reload 2s 1s\n}\n";

struct Harness {
    std::string file = kRunning;  // what the next read returns
    std::vector<std::string> applied;
    bool fail = false;
    std::optional<dns::ReloadConfig> next_reload = dns::ReloadConfig{};
    CorefileReloader reloader{
        "Corefile",
        kRunning,
        dns::ReloadConfig{},
        nullptr,
        [this](const std::string&) -> Result<std::string> { return file; },
        [this](const std::string& text) -> Result<std::optional<dns::ReloadConfig>> {
            applied.push_back(text);
            if (fail) return make_error(ErrorCode::kInvalidArgument, "Corefile:2: bad");
            return next_reload;
        }};

    std::string metrics() const {
        metrics::TextWriter out;
        reloader.append_metrics(out);
        return out.text();
    }
};

}  // namespace

TEST_CASE("corefile reload: the digest is of the parsed Corefile") {
    const std::string digest = corefile_digest(kRunning, "Corefile", nullptr);
    CHECK(digest.size() == 128);
    // Comments and spacing are no change, as in CoreDNS.
    CHECK(corefile_digest(".:53 {  # the cluster\n kubernetes   cluster.local\n\n reload 2s 1s\n}",
                          "Corefile", nullptr) == digest);
    CHECK(corefile_digest(".:53 {\n kubernetes cluster.local\n reload 3s 1s\n}", "Corefile",
                          nullptr) != digest);
    // Text that does not parse still has a digest (of its bytes).
    CHECK(corefile_digest(".:53 {", "Corefile", nullptr).size() == 128);
}

TEST_CASE("corefile reload: a change is applied once; an unchanged file is not") {
    Harness h;
    h.reloader.check();
    CHECK(h.applied.empty());
    h.file = ".:53 {\n kubernetes cluster.local {\n  ttl 60\n }\n reload 2s 1s\n}\n";
    h.reloader.check();
    h.reloader.check();
    REQUIRE(h.applied.size() == 1);
    CHECK(h.applied[0] == h.file);
    const std::string text = h.metrics();
    CHECK(text.find("coredns_reload_failed_total 0") != std::string::npos);
    CHECK(text.find("coredns_reload_version_info{hash=\"sha512\",value=\"" +
                    corefile_digest(h.file, "Corefile", nullptr) + "\"} 1") != std::string::npos);
}

TEST_CASE("corefile reload: a bad Corefile is tried once and counted") {
    Harness h;
    h.fail = true;
    h.file = ".:53 {\n kubernetes cluster.local\n nonsense\n}\n";
    h.reloader.check();
    h.reloader.check();
    CHECK(h.applied.size() == 1);
    CHECK(h.metrics().find("coredns_reload_failed_total 1") != std::string::npos);
    // Back to the running text: a change again, applied.
    h.fail = false;
    h.file = kRunning;
    h.reloader.check();
    CHECK(h.applied.size() == 2);
    CHECK(h.metrics().find("coredns_reload_failed_total 1") != std::string::npos);
}

TEST_CASE("corefile reload: a read error is no change") {
    Harness h;
    CorefileReloader reloader(
        "Corefile", kRunning, dns::ReloadConfig{}, nullptr,
        [](const std::string&) -> Result<std::string> {
            return make_error(ErrorCode::kIo, "Corefile: No such file or directory");
        },
        [&h](const std::string& text) -> Result<std::optional<dns::ReloadConfig>> {
            h.applied.push_back(text);
            return std::optional<dns::ReloadConfig>();
        });
    reloader.check();
    CHECK(h.applied.empty());
}

TEST_CASE("corefile reload: the reload plugin of the first block that has one") {
    dns::CorefileConfig config;
    CHECK_FALSE(reload_config(config));
    config.servers.resize(2);
    config.servers[1].reload =
        dns::ReloadConfig{std::chrono::seconds(5), std::chrono::seconds(2), 3};
    REQUIRE(reload_config(config));
    CHECK(reload_config(config)->interval == std::chrono::seconds(5));
}
