// DnsOptions: everything the DNS service is configured with, from the
// daemon's flags (--dns-*) or from a Corefile (dns/corefile/). Plain values,
// copied freely; the service reads them at start() and reconfigure().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "dns/forward/cache_set.h"
#include "dns/forward/forward.h"
#include "dns/serve/query_log.h"
#include "dns/serve/rrl.h"
#include "dns/serve/tcp_stream.h"
#include "dns/zone/hosts.h"
#include "dns/zone/pod_records.h"
#include "dns/zone/resolver_policy.h"

namespace sb::dns {

struct DnsOptions {
    std::vector<HostPort> listen;  // --dns-listen
    std::string cluster_domain = "cluster.local";
    uint32_t ttl = 30;                        // --dns-ttl
    PodRecords pods = PodRecords::kInsecure;  // --dns-pods
    std::vector<HostPort> upstreams;  // --dns-upstream; empty: nameservers of /etc/resolv.conf
    ForwardSetOptions forward;        // the default upstreams' (a Corefile's `forward .`)
    // Stub domains (the Corefile's other server blocks): their names go to
    // their own upstreams, longest zone first. Zones outside cluster_domain.
    std::vector<StubZone> stubs;
    // Set by a Corefile: its server blocks and their `cache`s. Unset: one
    // cache for every forwarded name (CacheSettings::flags_default()).
    std::optional<std::vector<CacheBlock>> caches;
    unsigned workers = 0;  // 0: one per core
    // Where the default upstreams come from when `upstreams` is empty.
    std::string resolv_conf = "/etc/resolv.conf";
    // Set by a Corefile (corefile_options.cpp); the defaults are the flags'
    // behaviour. kubernetes: reverse zones and fallthrough,
    // endpoint_pod_names, noendpoints (endpoints = false).
    ClusterPolicy cluster;
    bool endpoint_pod_names = false;
    bool endpoints = true;
    std::optional<HostsOptions> hosts;  // the hosts plugin
    AnswerShuffle shuffle = AnswerShuffle::kZoneAnswers;
    // The Corefile's `log` and `errors` (no block without a Corefile: nothing logged).
    QueryLogConfig query_log;
    // DNS over TCP (ServerOptions'); a Corefile's `timeouts` read and idle.
    std::chrono::milliseconds tcp_read_timeout = kTcpReadTimeout;
    std::chrono::milliseconds tcp_idle_timeout = kTcpIdleTimeout;
    // This node's name (--hostname-override, NODE_NAME, else the host
    // name): the Pods whose queries the server-side search path knows.
    // Read at start only.
    std::string node_name;
    // `autopath @kubernetes`, --dns-autopath: the server walks a Pod's
    // search path itself (docs/dns.md, "Search path on the server").
    bool autopath = false;
    // --dns-rrl, --dns-rrl-slip, --dns-rrl-table-size: rate 0 is off. Read
    // at start only (a Corefile reload keeps the limiter).
    RrlSettings rrl;
    // Set by the daemon, whose proxy programs this node: a Service it
    // programs is published once report_programmed() says its rules are in
    // (docs/dns.md, "Publish after programming"). --dns-local-address's
    // ClusterIPs get no rules and wait for none.
    bool publish_after_programming = false;
    std::vector<IpAddress> local_dns_addresses;
    // The warm state's file (dns/zone/warm_state.h; empty: none) and whose
    // state it is (the boot and network namespace): read at start, so that
    // DNS answers from the last synced zone until its own first one, and
    // rewritten as synced zones are published (docs/dns.md, "Warm start").
    std::string state_file;
    std::string state_identity;
};

// --dns-upstream: comma-separated ADDR[:PORT], IPv6 as [ADDR]:PORT, port 53 when omitted.
// The error names the bad entry; the caller prefixes the flag.
Result<std::vector<HostPort>> parse_upstreams(std::string_view text);

}  // namespace sb::dns
