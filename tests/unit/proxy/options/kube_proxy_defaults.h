// kube-proxy's defaults for the options switchboard took from it, checked
// the same way for the command line and for kubeadm's --config file.
#pragma once

#include <catch.hpp>

#include "proxy/options/flags.h"

// `localhost_node_ports`: v1alpha2 defaults iptables.localhostNodePorts to
// false, the flag and v1alpha1 to true.
inline void check_kube_proxy_defaults(const sb::proxy::Options& options,
                                      bool localhost_node_ports = true) {
    using namespace std::chrono_literals;
    CHECK(options.sync_period == 30s);
    CHECK(options.min_sync_period == 1s);
    CHECK(options.backend.masquerade_mark == 0x4000);  // bit 14
    CHECK_FALSE(options.backend.masquerade_all);
    // Every local address: kube-proxy's default outside a mode named nftables.
    CHECK(options.backend.nodeport_addresses.empty());
    CHECK_FALSE(options.nodeport_primary);
    CHECK(options.healthz_bind == sb::parse_host_port("0.0.0.0:10256").value());
    CHECK(options.metrics_bind == sb::parse_host_port("127.0.0.1:10249").value());
    CHECK(options.bind_address.is_unspecified());
    CHECK(options.bind_address.is_v4());
    CHECK_FALSE(options.bind_address_hard_fail);
    CHECK(options.backend.local_detect_mode == sb::rules::LocalDetectMode::kClusterCidr);
    CHECK(options.backend.local_interface.empty());
    CHECK(options.backend.localhost_node_ports == localhost_node_ports);  // kubeadm writes null
    CHECK(options.conntrack.max_per_core == 32768);
    CHECK(options.conntrack.min == 131072);
    CHECK(options.conntrack.tcp_established_timeout == 24h);
    CHECK(options.conntrack.tcp_close_wait_timeout == 1h);
    CHECK_FALSE(options.conntrack.tcp_be_liberal);
    CHECK(options.conntrack.udp_timeout == 0s);
    CHECK(options.conntrack.udp_stream_timeout == 0s);
    CHECK(options.oom_score_adj == -999);
    CHECK(options.verbosity == 0);
}
