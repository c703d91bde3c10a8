// Server::append_metrics: the serving threads' counters summed into
// CoreDNS's families, and the listeners' own.
#include <sys/socket.h>

#include "dns/serve/server.h"
#include "dns/serve/server_stats.h"
#include "dns/serve/worker.h"

namespace sb::dns {

namespace {

const char* protocol_name(int type) {
    return type == SOCK_STREAM ? "tcp" : "udp";
}

}  // namespace

std::string Server::metrics_server_label() const {
    return "dns://:" + std::to_string(options_.listen.empty() ? 53 : options_.listen[0].port);
}

namespace {

// The serving threads' counters summed over every worker and thread.
struct StatsTotals {
    // [udp, tcp]: summed request and response sizes.
    struct SizeSums {
        uint64_t buckets[ServerStats::kSizeBuckets.size() + 1] = {};
        uint64_t sum = 0;
    };

    uint64_t requests[2][2][ServerStats::kTypes] = {};
    uint64_t do_requests = 0;
    // [answerer][rcode]; the last answerer row is the forwarded replies.
    uint64_t responses[ServerStats::kAnswerers + 1][ServerStats::kRcodes] = {};
    uint64_t buckets[ServerStats::kBuckets.size() + 1] = {};
    double sum = 0;
    uint64_t truncated = 0;
    uint64_t tcp_rejected = 0;
    uint64_t tcp_evicted = 0;
    uint64_t tcp_timeouts = 0;
    uint64_t dropped = 0;
    uint64_t render_hits = 0;
    uint64_t render_bytes = 0;
    uint64_t render_flushes = 0;
    uint64_t autopath_answers = 0;
    uint64_t autopath_saved = 0;
    SizeSums request_sizes[2];
    SizeSums response_sizes[2];

    void add(const ServerStats& s);
};

uint64_t get(const std::atomic<uint64_t>& a) {
    return a.load(std::memory_order_relaxed);
}

void add_sizes(StatsTotals::SizeSums& to, const ServerStats::SizeHistogram& from) {
    for (size_t b = 0; b <= ServerStats::kSizeBuckets.size(); ++b)
        to.buckets[b] += get(from.buckets[b]);
    to.sum += get(from.sum);
}

void StatsTotals::add(const ServerStats& s) {
    for (size_t p = 0; p < 2; ++p) {
        for (size_t f = 0; f < 2; ++f) {
            for (size_t t = 0; t < ServerStats::kTypes; ++t)
                requests[p][f][t] += get(s.requests[p][f][t]);
        }
    }
    for (size_t r = 0; r < ServerStats::kRcodes; ++r) {
        for (size_t a = 0; a < ServerStats::kAnswerers; ++a)
            responses[a][r] += get(s.responses[a][r]);
        responses[ServerStats::kAnswerers][r] += get(s.forwarded_responses[r]);
    }
    for (const auto* h : {&s.duration, &s.forwarded_duration}) {
        for (size_t b = 0; b <= ServerStats::kBuckets.size(); ++b) buckets[b] += get(h->buckets[b]);
        sum += h->sum.load(std::memory_order_relaxed);
    }
    do_requests += get(s.do_requests);
    truncated += get(s.truncated) + get(s.forwarded_truncated);
    tcp_rejected += get(s.tcp_rejected);
    tcp_evicted += get(s.tcp_evicted);
    tcp_timeouts += get(s.tcp_timeouts);
    dropped += get(s.dropped);
    render_hits += get(s.render_hits);
    render_bytes += get(s.render_bytes);
    render_flushes += get(s.render_flushes);
    autopath_answers += get(s.autopath_answers);
    autopath_saved += get(s.autopath_round_trips_saved);
    for (size_t p = 0; p < 2; ++p) {
        add_sizes(request_sizes[p], s.request_size[p]);
        add_sizes(response_sizes[p], s.response_size[p]);
        add_sizes(response_sizes[p], s.forwarded_response_size[p]);
    }
}

// CoreDNS's families, with CoreDNS's labels. One server block answers every
// name: zone ".", no view; `server` is "dns://:PORT" of the first listen
// address, every listener summed into it (docs/dns.md, "Metrics").
void write_coredns_families(metrics::TextWriter& out, const StatsTotals& totals,
                            const std::string& server) {
    const std::string zone = ".";
    const std::string view;
    using metrics::Type;
    out.family({"coredns_dns_requests_total",
                "Counter of DNS requests made per zone, protocol and family.",
                Type::kCounter,
                {"server", "zone", "view", "proto", "family", "type"}});
    for (size_t p = 0; p < 2; ++p) {
        for (size_t f = 0; f < 2; ++f) {
            for (size_t t = 0; t < ServerStats::kTypes; ++t) {
                out.sample({server, zone, view, p == 0 ? "udp" : "tcp", f == 0 ? "1" : "2",
                            type_name(ServerStats::type_at(t))},
                           totals.requests[p][f][t]);
            }
        }
    }
    out.family({"coredns_dns_do_requests_total",
                "Counter of DNS requests with DO bit set per zone.",
                Type::kCounter,
                {"server", "zone", "view"}});
    out.sample({server, zone, view}, totals.do_requests);
    out.family({"coredns_dns_responses_total",
                "Counter of response status codes.",
                Type::kCounter,
                {"server", "zone", "view", "rcode", "plugin"}});
    static constexpr const char* kPlugins[ServerStats::kAnswerers + 1] = {"kubernetes", "cache", "",
                                                                          "forward"};
    for (size_t a = 0; a <= ServerStats::kAnswerers; ++a) {
        for (size_t r = 0; r < ServerStats::kRcodes; ++r) {
            out.sample({server, zone, view, r < 6 ? to_string(static_cast<Rcode>(r)) : "other",
                        kPlugins[a]},
                       totals.responses[a][r]);
        }
    }
    out.family({"coredns_dns_request_duration_seconds",
                "Histogram of the time (in seconds) each request took per zone.",
                Type::kHistogram,
                {"server", "zone", "view"}});
    out.histogram({server, zone, view},
                  metrics::HistogramData{ServerStats::kBuckets, totals.buckets, totals.sum});
    auto sizes = [&](metrics::Family family, const StatsTotals::SizeSums(&per_proto)[2]) {
        out.family(family);
        for (size_t p = 0; p < 2; ++p) {
            out.histogram({server, zone, view, p == 0 ? "udp" : "tcp"},
                          metrics::HistogramData{ServerStats::kSizeBuckets, per_proto[p].buckets,
                                                 static_cast<double>(per_proto[p].sum)});
        }
    };
    // CoreDNS's help texts, word for word (its request size is the
    // request's length, whatever the help says).
    sizes({"coredns_dns_request_size_bytes",
           "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
           Type::kHistogram,
           {"server", "zone", "view", "proto"}},
          totals.request_sizes);
    sizes({"coredns_dns_response_size_bytes",
           "Size of the returned response in bytes.",
           Type::kHistogram,
           {"server", "zone", "view", "proto"}},
          totals.response_sizes);
    // CoreDNS's autopath plugin's (plugin/autopath/metrics.go).
    out.family({"coredns_autopath_success_total",
                "Counter of requests that did autopath.",
                Type::kCounter,
                {"server"}});
    out.sample({server}, totals.autopath_answers);
}

// switchboard's own families of the serving threads.
void write_switchboard_families(metrics::TextWriter& out, const StatsTotals& totals) {
    using metrics::Type;
    auto counter = [&out](const char* name, const char* help, uint64_t value) {
        out.family({name, help, Type::kCounter, {}});
        out.sample({}, value);
    };
    counter("switchboard_dns_autopath_round_trips_saved_total",
            "Queries Pods did not send because the server walked their search path.",
            totals.autopath_saved);
    counter("switchboard_dns_truncated_total", "Replies sent with TC set.", totals.truncated);
    counter("switchboard_dns_tcp_rejected_total",
            "TCP connections accepted and closed at once: no file descriptor was left.",
            totals.tcp_rejected);
    counter("switchboard_dns_tcp_evictions_total",
            "TCP connections closed, least recently active first, to make room for a new one.",
            totals.tcp_evicted);
    counter("switchboard_dns_tcp_timeouts_total",
            "TCP connections closed by the read or idle timeout.", totals.tcp_timeouts);
    counter("switchboard_dns_render_cache_hits_total",
            "Zone replies served from a thread's rendered-reply cache.", totals.render_hits);
    counter("switchboard_dns_render_cache_flushes_total",
            "Rendered-reply caches emptied because an insert would pass their bound.",
            totals.render_flushes);
    out.family({"switchboard_dns_render_cache_bytes",
                "Bytes the serving threads' rendered-reply caches hold.",
                Type::kGauge,
                {}});
    out.sample({}, totals.render_bytes);
    counter("switchboard_dns_dropped_total", "Packets not answered (responses, runts).",
            totals.dropped);
}

}  // namespace

void Server::append_metrics(metrics::TextWriter& out) const {
    StatsTotals totals;
    for (const auto& worker : workers_) {
        worker->for_each_stats([&](const ServerStats& s) { totals.add(s); });
    }
    write_coredns_families(out, totals, metrics_server_label());
    write_switchboard_families(out, totals);
    using metrics::Type;
    // Labelled by the listen address as configured, so that a port 0 keeps
    // one series before and after the kernel picks its port.
    std::lock_guard lock(mutex_);
    auto per_listener = [&](metrics::Family family, auto value) {
        out.family(family);
        for (const auto& listener : listeners_) {
            out.sample(
                {protocol_name(listener.type), options_.listen[listener.address_index].to_string()},
                value(listener));
        }
    };
    per_listener({"switchboard_dns_bind_failures_total",
                  "Binds of a DNS listener that failed (each is retried).",
                  Type::kCounter,
                  {"proto", "address"}},
                 [](const Listener& l) { return l.failures; });
    per_listener({"switchboard_dns_listener_up",
                  "1 when the DNS listener is bound and serving, else 0.",
                  Type::kGauge,
                  {"proto", "address"}},
                 [](const Listener& l) { return uint64_t{l.serving ? 1u : 0u}; });
}

}  // namespace sb::dns
