// The typed DNS configuration a parsed Corefile stands for: one struct per
// plugin switchboard maps, with CoreDNS's defaults, a ServerConfig per server
// block and the CorefileConfig of them all. map_corefile (config.h) fills
// them; apply_corefile (options.h) and the daemon read them.
//
// Thread safety: plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "dns/forward/tls_client.h"
#include "dns/serve/query_log.h"
#include "dns/zone/pod_records.h"

namespace sb::dns {

// An HTTP listener of prometheus, health or ready: host "" means every
// address (Go's ":9153"); otherwise an IP address or "localhost".
struct HttpListen {
    std::string host;
    uint16_t port = 0;
    bool operator==(const HttpListen&) const = default;
};

// `fallthrough [ZONES...]`: no zones means every zone of the plugin.
struct Fallthrough {
    std::vector<std::string> zones;
};

struct KubernetesConfig {
    std::vector<std::string> zones;           // its own, else the server block's
    PodRecords pods = PodRecords::kDisabled;  // CoreDNS's default
    std::optional<Fallthrough> fallthrough;
    uint32_t ttl = 5;  // CoreDNS's default; 0-3600
    bool endpoint_pod_names = false;
    bool noendpoints = false;
    int line = 0;
};

enum class ForwardPolicy { kRandom, kRoundRobin, kSequential };

// One TO of forward: an address, or a resolv.conf-style file whose
// nameservers are the upstreams.
struct ForwardTarget {
    std::optional<HostPort> address;
    std::string resolv_conf;     // else: a file, read when mapped (it had a nameserver)
    bool tls = false;            // tls://ADDRESS
    std::string tls_servername;  // tls://ADDRESS%NAME
};

struct ForwardConfig {
    std::string from;  // normalised zone
    std::vector<ForwardTarget> to;
    uint32_t max_concurrent = 0;  // 0: no limit
    ForwardPolicy policy = ForwardPolicy::kRandom;
    std::chrono::milliseconds health_check{500};
    bool force_tcp = false;
    bool prefer_udp = false;
    std::vector<std::string> except;
    uint32_t max_fails = 2;
    std::vector<uint8_t> failover;  // rcodes
    std::optional<uint32_t> max_connect_attempts;
    std::optional<std::chrono::milliseconds> read_timeout;
    std::optional<IpAddress> source_address;
    bool failfast_all_unhealthy_upstreams = false;
    // `next RCODES` or `next_on_nodata`: hands a reply on to the block's
    // next forward, which switchboard refuses to chain (docs/corefile.md).
    bool hands_on = false;
    // Loaded (files read and checked) when mapped; set when a TO is tls://.
    std::shared_ptr<const TlsClient> tls;
    int line = 0;
};

struct CacheConfig {
    std::optional<uint32_t> max_ttl;  // `cache TTL`; unset: 3600 success, 1800 denial
    std::vector<std::string> zones;   // empty: the server block's
    uint32_t success_capacity = 9984;
    std::optional<uint32_t> success_ttl;
    std::optional<uint32_t> success_min_ttl;
    uint32_t denial_capacity = 9984;
    std::optional<uint32_t> denial_ttl;
    std::optional<uint32_t> denial_min_ttl;
    std::optional<std::chrono::milliseconds> serve_stale;     // set: serve_stale given
    bool serve_stale_verify = false;                          // `serve_stale D verify`
    std::optional<std::vector<std::string>> disable_success;  // empty vector: every zone
    std::optional<std::vector<std::string>> disable_denial;
    int line = 0;
};

struct HealthConfig {
    HttpListen listen{"", 8080};
    std::chrono::milliseconds lameduck{0};
    int line = 0;
};

struct ReloadConfig {
    std::chrono::milliseconds interval{30000};
    std::chrono::milliseconds jitter{15000};
    int line = 0;
};

// One rule of `log [NAMES...] [FORMAT] { class CLASSES... }`: one per NAME.
struct LogConfig {
    std::string name = ".";                     // normalised zone
    std::string format{kCommonLogFormat};       // {common} and {combined} expanded later
    uint8_t classes = kClassAll;                // ResponseClass bits
    std::chrono::milliseconds min_duration{0};  // `minDuration`: 0 none
    int line = 0;
};

struct HostsEntry {
    IpAddress address;
    std::vector<std::string> names;  // normalised
};

struct HostsConfig {
    std::string file = "/etc/hosts";
    std::vector<std::string> zones;  // empty: the server block's
    std::vector<HostsEntry> inline_entries;
    uint32_t ttl = 3600;
    bool no_reverse = false;
    std::chrono::milliseconds reload{5000};
    std::optional<Fallthrough> fallthrough;
    // `fallthrough_unsupported`: a question of another type than A, AAAA
    // and PTR goes on to the next plugin under `fallthrough`'s zones.
    bool fallthrough_unsupported = false;
    int line = 0;
};

// The `timeouts` plugin: DNS over TCP's read and idle timeouts (CoreDNS:
// each between 1s and 24h). `write` and `maxtcpqueries` are validated and
// warned about: the server has no equivalent (docs/dns.md, "TCP limits").
struct TimeoutsConfig {
    std::optional<std::chrono::milliseconds> read;
    std::optional<std::chrono::milliseconds> idle;
    int line = 0;
};

struct ServerConfig {
    std::vector<std::string> zones;
    uint16_t port = 53;
    int line = 0;
    std::vector<IpAddress> bind;  // empty: every address
    std::optional<KubernetesConfig> kubernetes;
    std::vector<ForwardConfig> forwards;
    std::optional<CacheConfig> cache;
    std::optional<HttpListen> prometheus;
    std::optional<HealthConfig> health;
    std::optional<HttpListen> ready;
    std::optional<ReloadConfig> reload;
    std::optional<HostsConfig> hosts;
    std::optional<TimeoutsConfig> timeouts;
    bool loadbalance = false;
    bool autopath = false;  // `autopath @kubernetes`
    bool loop = false;
    bool errors = false;
    std::vector<LogConfig> log;  // every `log` directive's rules, in order
};

struct CorefileConfig {
    std::vector<ServerConfig> servers;
    std::vector<std::string> warnings;  // `PATH:LINE: ...`, one line each
};

}  // namespace sb::dns
