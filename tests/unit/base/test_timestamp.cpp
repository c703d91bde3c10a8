// RFC 3339 as Kubernetes writes timestamps and as Go's json.Marshal prints them.
#include <catch.hpp>

#include "base/timestamp.h"

using namespace sb;
using namespace std::chrono;

TEST_CASE("RFC 3339 timestamps parse as Go's RFC3339Nano layout") {
    const SystemTime epoch{};
    CHECK(parse_rfc3339("1970-01-01T00:00:00Z") == epoch);
    CHECK(parse_rfc3339("1970-01-02T00:00:01.5Z") == epoch + 86401s + 500ms);
    CHECK(parse_rfc3339("1970-01-01T02:00:00+02:00") == epoch);
    CHECK(parse_rfc3339("1969-12-31T23:30:00-00:30") == epoch);
    CHECK(parse_rfc3339("2024-02-29T12:00:00.123456789Z") ==
          SystemTime{sys_days{year{2024} / 2 / 29}} + 12h + 123456789ns);
    // Digits past nanoseconds are dropped, as Go does.
    CHECK(parse_rfc3339("1970-01-01T00:00:00.0000000019Z") == epoch + 1ns);
    for (const char* bad :
         {"", "1970-01-01", "1970-01-01T00:00:00", "1970-01-01 00:00:00Z", "1970-13-01T00:00:00Z",
          "2023-02-29T00:00:00Z", "1970-01-01T24:00:00Z", "1970-01-01T00:60:00Z",
          "1970-01-01T00:00:60Z", "1970-01-01T00:00:00.Z", "1970-01-01T00:00:00+0200",
          "1970-01-01T00:00:00Zjunk", "yesterday", "1970-01-01t00:00:00z"}) {
        INFO(bad);
        CHECK_FALSE(parse_rfc3339(bad));
    }
}

TEST_CASE("RFC 3339 times SystemTime cannot hold are refused, not overflowed") {
    // Found by tests/fuzz/decode_fuzz.cpp (a Node's deletionTimestamp in 4048:
    // signed overflow converting to nanoseconds).
    CHECK_FALSE(parse_rfc3339("4048-05-14T08:58:02Z").has_value());
    CHECK_FALSE(parse_rfc3339("9999-12-31T23:59:59.999999999Z").has_value());
    CHECK_FALSE(parse_rfc3339("1000-01-01T00:00:00Z").has_value());
    CHECK(parse_rfc3339("2261-12-31T23:59:59Z").has_value());
    CHECK(parse_rfc3339("1678-01-01T00:00:00+01:00").has_value());
}

TEST_CASE("times print as Go's json.Marshal prints a UTC time.Time") {
    const SystemTime epoch{};
    CHECK(format_rfc3339_nano(epoch) == "1970-01-01T00:00:00Z");
    CHECK(format_rfc3339_nano(epoch + 86401s + 500ms) == "1970-01-02T00:00:01.5Z");
    CHECK(format_rfc3339_nano(epoch + 1ns) == "1970-01-01T00:00:00.000000001Z");
    const auto time = SystemTime{sys_days{year{2024} / 5 / 1}} + 12h + 123456789ns;
    CHECK(parse_rfc3339(format_rfc3339_nano(time)) == time);
}
