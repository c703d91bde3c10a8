// The command line parsed with a --config file held in memory, for the
// tests of the KubeProxyConfiguration reader.
#pragma once

#include <catch.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "proxy/options/flags.h"

namespace sb::proxy::testing {

// An environment whose files are `files` (path -> text); host name host-a.
inline Environment environment_with(std::map<std::string, std::string> files) {
    Environment environment{"", "host-a", nullptr};
    environment.read_file = [files](const std::string& path) -> Result<std::string> {
        auto it = files.find(path);
        if (it == files.end()) return make_error(ErrorCode::kInvalidArgument, path + ": missing");
        return it->second;
    };
    return environment;
}

// `flags` after --config=c.conf, the file c.conf holding `text`.
inline Result<Options> parse_with_config_text(const std::string& text,
                                              std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), "--config=c.conf");
    return parse_flags(flags, environment_with({{"c.conf", text}}));
}

inline Options options_ok(const Result<Options>& options) {
    INFO((options ? std::string("ok") : options.error().message));
    REQUIRE(options.ok());
    return *options;
}

// The error of a parse that must fail: kInvalidArgument, one line.
inline std::string error_line(const Result<Options>& options) {
    REQUIRE_FALSE(options.ok());
    CHECK(options.error().code == ErrorCode::kInvalidArgument);
    CHECK(options.error().message.find('\n') == std::string::npos);
    return options.error().message;
}

inline Prefix prefix(const char* text) {
    return *Prefix::parse(text);
}
inline HostPort host_port(const char* text) {
    return *parse_host_port(text);
}

// The Options of the example that sets every honoured field, which the
// test of each version writes in its own layout.
inline void check_every_field_example(const Options& options) {
    using namespace std::chrono_literals;
    CHECK(options.proxy_mode == ProxyMode::kIptables);
    CHECK(options.kubeconfig == "/etc/kp.conf");
    CHECK(options.node_name == "worker-9");
    CHECK(options.backend.cluster_cidrs ==
          std::vector<Prefix>{prefix("10.244.0.0/16"), prefix("fd00:10:244::/56")});
    CHECK(options.bind_address == *IpAddress::parse("192.168.1.10"));
    CHECK(options.healthz_bind == host_port("0.0.0.0:11256"));
    CHECK(options.metrics_bind == host_port("0.0.0.0:10249"));
    CHECK(options.bind_address_hard_fail);
    CHECK(options.backend.nodeport_addresses ==
          std::vector<Prefix>{prefix("192.168.0.0/16"), prefix("10.1.2.3/32")});
    CHECK(options.backend.local_detect_mode == rules::LocalDetectMode::kBridgeInterface);
    CHECK(options.backend.local_interface == "cbr0");
    CHECK(options.backend.masquerade_all);
    CHECK(options.backend.masquerade_mark == 0x8);
    CHECK_FALSE(options.backend.localhost_node_ports);
    CHECK(options.sync_period == 60s);
    CHECK(options.min_sync_period == 2s);
    CHECK(options.backend.ipvs_scheduler == "sh");
    CHECK(options.conntrack.max_per_core == 0);
    CHECK(options.conntrack.min == 5000);
    CHECK(options.conntrack.tcp_established_timeout == 2h);
    CHECK(options.conntrack.tcp_close_wait_timeout == 30min);
    CHECK(options.conntrack.tcp_be_liberal);
    CHECK(options.conntrack.udp_timeout == 30s);
    CHECK(options.conntrack.udp_stream_timeout == 2min);
    CHECK(options.oom_score_adj == -500);
    CHECK(options.verbosity == 4);
}

}  // namespace sb::proxy::testing
