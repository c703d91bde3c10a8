// The start-up node settings against a fake /proc and /sys in a temporary
// folder: which files are written, with what, and what is left alone.
#include <catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "proxy/app/node_setup.h"

using namespace sb;
using namespace sb::proxy;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// A /proc and /sys holding the files node_setup reads, with kernel-like
// values; removed at the end of the test.
class FakeKernel {
  public:
    FakeKernel() {
        char name[] = "/tmp/sb-node-setup-XXXXXX";
        REQUIRE(mkdtemp(name) != nullptr);
        root_ = name;
        paths.proc = root_ + "/proc";
        paths.sys = root_ + "/sys";
        write(netfilter("nf_conntrack_max"), "65536\n");
        write(netfilter("nf_conntrack_tcp_timeout_established"), "432000\n");
        write(netfilter("nf_conntrack_tcp_timeout_close_wait"), "60\n");
        write(netfilter("nf_conntrack_tcp_be_liberal"), "0\n");
        write(netfilter("nf_conntrack_udp_timeout"), "30\n");
        write(netfilter("nf_conntrack_udp_timeout_stream"), "120\n");
        write(hashsize(), "16384\n");
        write(paths.proc + "/self/oom_score_adj", "0\n");
        write(paths.sys + "/devices/system/cpu/online", "0-3\n");
    }
    ~FakeKernel() { fs::remove_all(root_); }

    std::string netfilter(const std::string& name) const {
        return paths.proc + "/sys/net/netfilter/" + name;
    }
    std::string hashsize() const { return paths.sys + "/module/nf_conntrack/parameters/hashsize"; }

    static void write(const std::string& path, const std::string& text) {
        fs::create_directories(fs::path(path).parent_path());
        std::ofstream(path) << text;
    }
    static std::string read(const std::string& path) {
        std::ifstream file(path);
        std::ostringstream text;
        text << file.rdbuf();
        return text.str();
    }

    KernelPaths paths;

  private:
    std::string root_;
};

}  // namespace

TEST_CASE("nf_conntrack_max: kube-proxy's formula") {
    ConntrackOptions conntrack;  // 32768 per core, at least 131072
    CHECK(conntrack_max(conntrack, 2) == 131072);
    CHECK(conntrack_max(conntrack, 8) == 262144);
    CHECK(conntrack_max(conntrack, 64) == 1048576);  // capped
    conntrack.max_per_core = 0;
    CHECK(conntrack_max(conntrack, 8) == 0);  // leave it alone
}

TEST_CASE("nf_conntrack_max: kube-proxy's TestGetConntrackMax table") {
    // pkg/proxy/conntrack's cases (min, maxPerCore, CPUs -> limit), the
    // 1048576 cap of kube-proxy 1.33 included.
    struct Case {
        int32_t min;
        int32_t max_per_core;
        int cpus;
        int64_t expected;
    };
    for (const Case& test :
         {Case{0, 0, 4, 0}, Case{1, 67890, 4, 67890 * 4}, Case{1, 67890, 16, 1048576},
          Case{123456, 1, 4, 123456}, Case{123456, 0, 4, 0}}) {
        INFO(test.min << " " << test.max_per_core << " " << test.cpus);
        ConntrackOptions conntrack;
        conntrack.min = test.min;
        conntrack.max_per_core = test.max_per_core;
        CHECK(conntrack_max(conntrack, test.cpus) == test.expected);
    }
}

TEST_CASE("the node's CPUs come from /sys, ranges and single CPUs") {
    FakeKernel kernel;
    CHECK(count_cpus(kernel.paths) == 4);
    FakeKernel::write(kernel.paths.sys + "/devices/system/cpu/online", "0-3,6,8-9\n");
    CHECK(count_cpus(kernel.paths) == 7);
    FakeKernel::write(kernel.paths.sys + "/devices/system/cpu/online", "garbage\n");
    CHECK(count_cpus(kernel.paths) >= 1);  // the fallback: hardware_concurrency
}

TEST_CASE("kube-proxy's default conntrack settings on a 4-CPU node") {
    FakeKernel kernel;
    auto warnings = apply_conntrack_settings(ConntrackOptions{}, kernel.paths);
    CHECK(warnings.empty());
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_max")) == "131072");
    CHECK(FakeKernel::read(kernel.hashsize()) == "32768");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_established")) == "86400");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_close_wait")) == "3600");
    // 0: left alone; be_liberal false: left alone.
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_udp_timeout")) == "30\n");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_udp_timeout_stream")) == "120\n");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_be_liberal")) == "0\n");
}

TEST_CASE("every conntrack setting, and what is only ever raised") {
    FakeKernel kernel;
    FakeKernel::write(kernel.netfilter("nf_conntrack_max"), "500000\n");
    FakeKernel::write(kernel.hashsize(), "200000\n");
    ConntrackOptions conntrack;
    conntrack.max_per_core = 1000;  // 4000 < min
    conntrack.min = 300000;         // below the current 500000: not lowered
    conntrack.tcp_established_timeout = 2h;
    conntrack.tcp_close_wait_timeout = 90s;
    conntrack.tcp_be_liberal = true;
    conntrack.udp_timeout = 45s;
    conntrack.udp_stream_timeout = 3min;
    auto warnings = apply_conntrack_settings(conntrack, kernel.paths);
    CHECK(warnings.empty());
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_max")) == "500000\n");
    CHECK(FakeKernel::read(kernel.hashsize()) == "200000\n");  // >= 300000 / 4
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_established")) == "7200");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_close_wait")) == "90");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_be_liberal")) == "1");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_udp_timeout")) == "45");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_udp_timeout_stream")) == "180");
}

TEST_CASE("zeros leave the kernel alone") {
    FakeKernel kernel;
    ConntrackOptions conntrack;
    conntrack.max_per_core = 0;
    conntrack.tcp_established_timeout = 0s;
    conntrack.tcp_close_wait_timeout = 0s;
    CHECK(apply_conntrack_settings(conntrack, kernel.paths).empty());
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_max")) == "65536\n");
    CHECK(FakeKernel::read(kernel.hashsize()) == "16384\n");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_established")) == "432000\n");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_close_wait")) == "60\n");
}

TEST_CASE("a value the kernel refuses is one warning, and the rest still applies") {
    FakeKernel kernel;
    // No nf_conntrack_max (as in a namespace without it) and a read-only
    // hashsize; chmod does not stop root, so the test removes the file.
    fs::remove(kernel.netfilter("nf_conntrack_max"));
    fs::remove(kernel.hashsize());
    auto warnings = apply_conntrack_settings(ConntrackOptions{}, kernel.paths);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0] == "cannot set " + kernel.netfilter("nf_conntrack_max") +
                             " to 131072: No such file or directory");
    CHECK(warnings[1] == "cannot read " + kernel.hashsize());
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_tcp_timeout_established")) == "86400");
    CHECK_FALSE(fs::exists(kernel.netfilter("nf_conntrack_max")));  // never created
}

TEST_CASE("oom_score_adj, and --init-only skipping it") {
    FakeKernel kernel;
    Options options;
    options.oom_score_adj = -999;
    options.init_only = true;
    CHECK(apply_node_settings(options, kernel.paths).empty());
    CHECK(FakeKernel::read(kernel.paths.proc + "/self/oom_score_adj") == "0\n");
    CHECK(FakeKernel::read(kernel.netfilter("nf_conntrack_max")) == "131072");
    options.init_only = false;
    CHECK(apply_node_settings(options, kernel.paths).empty());
    CHECK(FakeKernel::read(kernel.paths.proc + "/self/oom_score_adj") == "-999");
    fs::remove(kernel.paths.proc + "/self/oom_score_adj");
    auto warnings = apply_oom_score_adj(-999, kernel.paths);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].rfind("cannot set " + kernel.paths.proc + "/self/oom_score_adj to -999: ",
                            0) == 0);
}

TEST_CASE("node setup: the soft open file limit is raised to the hard one") {
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    rlimit lowered = saved;
    lowered.rlim_cur = saved.rlim_max > 256 ? 256 : saved.rlim_max / 2;
    REQUIRE(lowered.rlim_cur < saved.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
    CHECK(raise_open_file_limit().empty());
    rlimit now{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &now) == 0);
    CHECK(now.rlim_cur == saved.rlim_max);
    CHECK(raise_open_file_limit().empty());  // idempotent: nothing left to raise
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
}
