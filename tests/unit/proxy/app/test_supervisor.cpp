#include "proxy/app/supervisor.h"

#include <catch.hpp>

using namespace sb::proxy;
using namespace std::chrono_literals;

TEST_CASE("RestartPolicy: at once, until a daemon keeps dying right after its start") {
    RestartPolicy policy;
    CHECK(policy.delay_after(1s) == 0ms);
    CHECK(policy.delay_after(1s) == 0ms);
    CHECK(policy.delay_after(1s) == 1000ms);
    CHECK(policy.delay_after(1s) == 2000ms);
    CHECK(policy.delay_after(1s) == 4000ms);
    CHECK(policy.delay_after(1s) == 8000ms);
    CHECK(policy.delay_after(1s) == 8000ms);  // capped
    for (int i = 0; i < 100; ++i) CHECK(policy.delay_after(0s) == 8000ms);

    SECTION("a daemon that ran a while is restarted at once, and the count starts over") {
        CHECK(policy.delay_after(kQuickDeath) == 0ms);
        CHECK(policy.delay_after(1s) == 0ms);
        CHECK(policy.delay_after(1s) == 0ms);
        CHECK(policy.delay_after(1s) == 1000ms);
    }
}

TEST_CASE("supervise: only its own command line, else one usage line") {
    CHECK_FALSE(run_supervise_command({}));
    CHECK_FALSE(run_supervise_command({"--proxy-mode=nftables"}));
    CHECK(run_supervise_command({"supervise"}) == 2);
    CHECK(run_supervise_command({"supervise", "--"}) == 2);
    CHECK(run_supervise_command({"supervise", "switchboard"}) == 2);
}
