// commit_filter_then_nat (rules/iptables/commit_order.h) over fake commits:
// whatever fails, the tables end as they were, or the error says otherwise.
#include <catch.hpp>

#include <string>
#include <vector>

#include "rules/iptables/commit_order.h"

using namespace sb;
using namespace sb::rules::iptables;

namespace {

// Two fake tables, each "old" until committed; restore puts filter back.
struct FakeTables {
    std::string filter = "old";
    std::string nat = "old";
    bool filter_fails = false;
    bool nat_fails = false;
    bool restore_fails = false;
    std::vector<std::string> calls;

    Status run() {
        return commit_filter_then_nat({
            [this]() -> Status {
                calls.push_back("commit filter");
                if (filter_fails) return make_error(ErrorCode::kKernel, "filter refused");
                filter = "new";
                return {};
            },
            [this]() -> Status {
                calls.push_back("commit nat");
                if (nat_fails) return make_error(ErrorCode::kKernel, "nat refused");
                nat = "new";
                return {};
            },
            [this]() -> Status {
                calls.push_back("restore filter");
                if (restore_fails) return make_error(ErrorCode::kKernel, "restore refused");
                filter = "old";
                return {};
            },
        });
    }
};

}  // namespace

TEST_CASE("commit order: filter first, then nat; nothing restored when both commit") {
    FakeTables t;
    REQUIRE(t.run());
    CHECK(t.calls == std::vector<std::string>{"commit filter", "commit nat"});
    CHECK((t.filter == "new" && t.nat == "new"));
}

TEST_CASE("commit order: a filter failure commits nothing") {
    FakeTables t;
    t.filter_fails = true;
    Status s = t.run();
    REQUIRE_FALSE(s);
    CHECK(s.error().message == "filter refused");
    CHECK(t.calls == std::vector<std::string>{"commit filter"});
    CHECK((t.filter == "old" && t.nat == "old"));
}

TEST_CASE("commit order: a nat failure after filter committed puts filter back") {
    FakeTables t;
    t.nat_fails = true;
    Status s = t.run();
    REQUIRE_FALSE(s);
    CHECK(s.error().message.rfind("nat refused", 0) == 0);
    CHECK(s.error().message.find("filter table restored") != std::string::npos);
    CHECK(t.calls == std::vector<std::string>{"commit filter", "commit nat", "restore filter"});
    CHECK((t.filter == "old" && t.nat == "old"));
}

TEST_CASE("commit order: a failed restore is reported, not hidden") {
    FakeTables t;
    t.nat_fails = true;
    t.restore_fails = true;
    Status s = t.run();
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("restoring the filter table failed too") != std::string::npos);
    CHECK(s.error().message.find("restore refused") != std::string::npos);
}
