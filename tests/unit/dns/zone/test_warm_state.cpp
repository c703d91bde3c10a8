// The warm state's file (dns/zone/warm_state.h): a write is read back, a
// zone already written is not written again, and a background write gives
// way to a write() that comes meanwhile without a failure or a stray file.
#include "dns/zone/warm_state.h"

#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "watch/snapshot_builder.h"

namespace sb::dns {
namespace {

const char* const kIdentity = "boot b netns 7";

// A synced zone of `services` Services; `generation` sets its serial.
std::shared_ptr<const Zone> zone_of(int services, uint64_t generation) {
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true).generation(generation);
    for (int i = 0; i < services; ++i) {
        watch::Service service;
        service.meta.ns = "ns-" + std::to_string(i % 20);
        service.meta.name = "svc-" + std::to_string(i);
        service.cluster_ips = {IpAddress::v4(0x0a600000u + static_cast<uint32_t>(i) + 1)};
        service.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
        snapshot.add(service);
    }
    return *Zone::build(*snapshot.build(), ZoneConfig{});
}

struct TemporaryFolder {
    std::filesystem::path path;
    TemporaryFolder() {
        char name[] = "/tmp/sb-warm-state.XXXXXX";
        REQUIRE(::mkdtemp(name) != nullptr);
        path = name;
    }
    ~TemporaryFolder() { std::filesystem::remove_all(path); }
};

}  // namespace

TEST_CASE("warm state file: a write is read back, and the same zone is not written twice") {
    TemporaryFolder folder;
    WarmStateFile file((folder.path / "dns.state").string(), kIdentity);
    CHECK(file.load(ZoneConfig{}).error().code == ErrorCode::kNotFound);
    auto zone = zone_of(3, 42);
    REQUIRE(file.write(zone).ok());
    REQUIRE(file.write(zone).ok());
    CHECK(file.writes() == 1);
    auto loaded = file.load(ZoneConfig{});
    REQUIRE(loaded.ok());
    CHECK((*loaded)->serial() == zone->serial());
    CHECK((*loaded)->name_count() == zone->name_count());
    auto again = file.write_in_background(zone, [] {});
    REQUIRE(again.ok());
    CHECK(*again);  // already written: nothing to give way
    CHECK(file.writes() == 1);

    // A background write runs its pause before each piece it writes.
    auto bigger = zone_of(2000, 43);
    int pauses = 0;
    auto written = file.write_in_background(bigger, [&pauses] { ++pauses; });
    REQUIRE(written.ok());
    CHECK(*written);
    CHECK(file.writes() == 2);
    CHECK(pauses > 1);  // more than one 64 KiB piece
    CHECK((*file.load(ZoneConfig{}))->serial() == bigger->serial());
}

TEST_CASE("zone state: a sink that throws stops the writing") {
    auto zone = zone_of(2000, 7);
    int pieces = 0;
    CHECK_THROWS_AS(zone->write_state(kIdentity,
                                      [&pieces](std::string_view) {
                                          ++pieces;
                                          throw std::runtime_error("stop");
                                      }),
                    std::runtime_error);
    CHECK(pieces == 1);
}

TEST_CASE("warm state file: a background write gives way to a write meanwhile") {
    TemporaryFolder folder;
    const std::string path = (folder.path / "dns.state").string();
    WarmStateFile file(path, kIdentity);
    auto big = zone_of(20000, 1);  // megabytes: many pieces
    auto fresh = zone_of(2, 2);
    Result<bool> background = false;
    std::thread writer([&] {
        background = file.write_in_background(
            big, [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
    });
    // Once the background write has its file open (bounded wait), write().
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(path + ".tmp") && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    REQUIRE(file.write(fresh).ok());
    writer.join();
    REQUIRE(background.ok());
    // Given way (the usual case) or finished first: either way no failure,
    // the fresh zone is the file's, and no temporary file is left.
    CHECK(file.writes() == (*background ? 2u : 1u));
    CHECK(file.write_failures() == 0);
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    auto loaded = file.load(ZoneConfig{});
    REQUIRE(loaded.ok());
    CHECK((*loaded)->serial() == fresh->serial());
}

}  // namespace sb::dns
