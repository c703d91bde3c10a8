// Fixtures shared by the kernel tests of both backends
// (tests/unit/nftables/kernel_test.cpp, tests/unit/iptables/kernel_test.cpp):
// entering a private network namespace and running a shell command. Need
// root; header-only.
#pragma once

#include <sched.h>
#include <unistd.h>
#include <catch.hpp>

#include <array>
#include <cstdio>
#include <string>

namespace sb::rules::testing {

// Moves the process into a fresh network namespace, so the host's ruleset is
// never read or changed. Each call leaves the previous namespace behind.
inline void fresh_netns() {
    REQUIRE(geteuid() == 0);
    REQUIRE(unshare(CLONE_NEWNET) == 0);
}

struct Command {
    int status = -1;
    std::string out;  // stdout and stderr
};

// Runs `command` through the shell (blocking) and returns its output.
inline Command run(const std::string& command) {
    Command c;
    FILE* p = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) c.out.append(buf.data(), n);
    c.status = pclose(p);
    return c;
}

}  // namespace sb::rules::testing
