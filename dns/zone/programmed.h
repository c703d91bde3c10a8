// ProgrammedServices: what this node's kernel serves of each Service the
// proxy programs, as the daemon reports it after its syncs, so that the zone
// publishes a ClusterIP Service's names only once its rules are in and
// withdraws them before the rules go (docs/dns.md, "Publish after
// programming"). The dns layer cannot see the proxy's Plan: the daemon
// converts the service ports it programmed into these.
//
// Thread safety: none; DnsService keeps one under its zone mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "watch/objects.h"

namespace sb::dns {

// One programmed service port, as the Service's ports name it.
struct ProgrammedPort {
    std::string name;
    watch::Protocol protocol = watch::Protocol::kTCP;
    uint16_t port = 0;
    auto operator<=>(const ProgrammedPort&) const = default;
};

// What the kernel serves of one Service: the ClusterIPs that lead to it
// and its ports. Both sorted and unique.
struct ProgrammedService {
    std::vector<IpAddress> cluster_ips;
    std::vector<ProgrammedPort> ports;
    bool operator==(const ProgrammedService&) const = default;
    bool has_port(const watch::ServicePort& port) const;
    bool has_cluster_ip(const IpAddress& address) const;
};

using ProgrammedServicePtr = std::shared_ptr<const ProgrammedService>;

// A report: per Service, what the kernel serves now (null: nothing).
using ProgrammedChanges = std::vector<std::pair<watch::ObjectKey, ProgrammedServicePtr>>;

class ProgrammedServices {
  public:
    // Null when the kernel serves nothing of the Service. A Service keeps
    // the same pointer until a report changes it, so that the zone can tell
    // by pointer whether a Service's names need recomputing.
    ProgrammedServicePtr find(const watch::ObjectKey& key) const;

    // Applies a report and returns the keys whose state changed. The first
    // call marks the state reported (even an empty report).
    std::vector<watch::ObjectKey> apply(const ProgrammedChanges& changes);

    // Whether the proxy has reported once: before its first sync the zone
    // is held back whole, so that a restart answers SERVFAIL (retry) rather
    // than NXDOMAIN for names whose rules the old process had programmed.
    bool reported() const { return reported_; }
    size_t size() const { return services_.size(); }

  private:
    std::map<watch::ObjectKey, ProgrammedServicePtr> services_;
    bool reported_ = false;
};

}  // namespace sb::dns
