// Fixtures shared by the kernel tests of both backends
// (tests/unit/rules/nftables/kernel_test.cpp, tests/unit/rules/iptables/kernel_test.cpp):
// entering a private network namespace, running a shell command, making
// UDP conntrack entries. Need root; header-only.
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

// Inserts a UDP conntrack entry: 10.244.5.5:`sport` sent to
// `service_ip`:`service_port`, DNATed to `endpoint_ip`:`endpoint_port`.
// False (with a warning) when the conntrack tool is missing.
inline bool add_udp_flow(const std::string& service_ip, int service_port,
                         const std::string& endpoint_ip, int endpoint_port, int sport) {
    if (run("command -v conntrack").status != 0) {
        WARN("conntrack tool missing: cannot create test entries");
        return false;
    }
    const std::string cmd = "conntrack -I -p udp -s 10.244.5.5 -d " + service_ip + " --sport " +
                            std::to_string(sport) + " --dport " + std::to_string(service_port) +
                            " -r " + endpoint_ip + " -q 10.244.5.5 --reply-port-src " +
                            std::to_string(endpoint_port) + " --reply-port-dst " +
                            std::to_string(sport) + " --timeout 120";
    Command c = run(cmd);
    INFO(cmd << "\n" << c.out);
    REQUIRE(c.status == 0);
    return true;
}

}  // namespace sb::rules::testing
