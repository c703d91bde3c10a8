#include "dns/forward/forward_metrics.h"

#include <iterator>
#include <map>

namespace sb::dns {

namespace {

using metrics::Type;

// CoreDNS's plugin.TimeBuckets: 0.25 ms to 8 s.
std::vector<double> time_buckets() {
    return metrics::exponential_buckets(0.00025, 2, 16);
}

constexpr const char* kProxyName = "forward";

}  // namespace

std::string rcode_label(uint8_t rcode) {
    static const char* const names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
                                        "NOTIMP",  "REFUSED", "YXDOMAIN", "YXRRSET",
                                        "NXRRSET", "NOTAUTH", "NOTZONE"};
    if (rcode < std::size(names)) return names[rcode];
    return std::to_string(rcode);
}

ForwardMetrics::ForwardMetrics(const std::vector<HostPort>& upstreams)
    : requests_({"coredns_forward_requests_total",
                 "Counter of requests made per upstream.",
                 Type::kCounter,
                 {"to"}}),
      responses_({"coredns_forward_responses_total",
                  "Counter of responses received per upstream.",
                  Type::kCounter,
                  {"rcode", "to"}}),
      duration_({"coredns_forward_request_duration_seconds",
                 "Histogram of the time each request took.",
                 Type::kHistogram,
                 {"to", "rcode"}},
                time_buckets()),
      proxy_duration_({"coredns_proxy_request_duration_seconds",
                       "Histogram of the time each request took.",
                       Type::kHistogram,
                       {"proxy_name", "to", "rcode"}},
                      time_buckets()),
      health_failures_(upstreams.size()) {
    for (const auto& upstream : upstreams) to_.push_back(upstream.to_string());
}

void ForwardMetrics::replied(size_t upstream, uint8_t rcode, double seconds) {
    const std::string& to = to_.at(upstream);
    const std::string rcode_text = rcode_label(rcode);
    requests_.with({to}).inc();
    responses_.with({rcode_text, to}).inc();
    duration_.with({to, rcode_text}).observe(seconds);
    proxy_duration_.with({kProxyName, to, rcode_text}).observe(seconds);
}

void ForwardMetrics::health_check_failed(size_t upstream) {
    health_failures_.at(upstream).inc();
}

uint64_t ForwardMetrics::health_check_failures(size_t upstream) const {
    return health_failures_.at(upstream).value();
}

void ForwardMetrics::append(metrics::TextWriter& out) const {
    requests_.write(out);
    responses_.write(out);
    duration_.write(out);
    proxy_duration_.write(out);
    // As client_golang's CounterVec: a series once an upstream has failed a
    // probe; one series per address (two sets may share an upstream).
    std::map<std::string, uint64_t> failures;
    for (size_t i = 0; i < to_.size(); ++i) {
        if (uint64_t n = health_failures_[i].value(); n > 0) failures[to_[i]] += n;
    }
    const char* help = "Counter of the number of failed healthchecks.";
    out.family({"coredns_forward_healthcheck_failures_total", help, Type::kCounter, {"to"}});
    for (const auto& [to, n] : failures) out.sample({to}, n);
    out.family(
        {"coredns_proxy_healthcheck_failures_total", help, Type::kCounter, {"proxy_name", "to"}});
    for (const auto& [to, n] : failures) out.sample({kProxyName, to}, n);
    metrics::write_metric(out,
                          {"coredns_forward_healthcheck_broken_total",
                           "Counter of the number of complete failures of the healthchecks.",
                           Type::kCounter,
                           {}},
                          broken_);
    metrics::write_metric(out,
                          {"coredns_forward_max_concurrent_rejects_total",
                           "Counter of the number of queries rejected because the concurrent "
                           "queries were at maximum.",
                           Type::kCounter,
                           {}},
                          rejects_);
}

}  // namespace sb::dns
