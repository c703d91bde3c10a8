// A packet tracer over a rendered nftables Model (kube-proxy's tracePacket
// idea): follows the first packet of a connection through the hooks the
// kernel would run (raw at -300, filter at -110, nat at -100, routing, filter
// input/forward, nat postrouting) and evaluates switchboard's rules the way
// nf_tables does (jump/goto/return, vmap lookups, terminal nat statements).
//
// `numgen random mod m` is explored for every value, so trace() returns every possible
// outcome with its exact probability: a uniform endpoint choice shows as n
// outcomes of 1/n each.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/ip.h"
#include "rules/nftables/model.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::nftables::testing {

using sb::rules::testing::Destination;
using sb::rules::testing::Fate;
using sb::rules::testing::Packet;
using AffinityKey = std::tuple<IpAddress, IpAddress, uint8_t, uint16_t>;  // saddr daddr proto dport

struct Outcome {
    Fate fate = Fate::kAccept;
    std::optional<Destination> dnat;
    bool masquerade = false;
    bool untracked = false;  // a notrack statement ran: no conntrack entry, no nat
    double probability = 1.0;
    std::vector<std::pair<AffinityKey, Destination>> affinity_updates;
    std::vector<std::string> chains;  // visited, for failure messages

    std::string describe() const;
};

class Tracer {
  public:
    // `local_addresses`: the node's own addresses (fib ... type local);
    // loopback addresses always count as local.
    Tracer(const Model& model, std::vector<IpAddress> local_addresses);

    std::vector<Outcome> trace(const Packet& packet) const;

    // Records an outcome's affinity updates (what the kernel's dynamic map
    // would hold after that connection).
    void remember(const Outcome& outcome);
    void forget_affinity() { affinity_.clear(); }

    struct State;  // one path through the hooks (internal)

  private:
    // decisions[i]: the value the i-th `numgen random mod m` yields (0 when
    // absent); moduli receives m of every numgen evaluated.
    Outcome run(const Packet& packet, const std::vector<uint32_t>& decisions,
                std::vector<uint32_t>& moduli) const;
    bool run_hook(const std::string& hook, State& s, bool with_nat = true) const;
    bool is_local(const IpAddress& address) const;

    const Model& model_;
    std::vector<IpAddress> local_;
    std::map<AffinityKey, Destination> affinity_;
};

}  // namespace sb::rules::nftables::testing
