// A packet tracer over a rendered iptables FamilyModel (kube-proxy's
// tracePacket idea): follows the first packet of a connection through the
// built-in chains the kernel would run (nat PREROUTING or OUTPUT, routing,
// filter INPUT/FORWARD/OUTPUT, nat POSTROUTING), entering only switchboard's
// hook rules (other rules are assumed to accept), and evaluates the rules as
// x_tables does (-j with implicit return, RETURN, terminal targets). A
// traced packet is the first of its connection: conntrack state NEW, plus
// DNAT after a DNAT rule.
//
// Every `-m statistic --mode random --probability p` is explored both ways,
// so trace() returns every possible outcome with its exact probability: a
// uniform endpoint choice shows as n outcomes of 1/n each. `-m recent`
// lists are tracer state: remember() records an outcome's --set entries.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/ip.h"
#include "rules/iptables/model.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::iptables::testing {

using sb::rules::testing::Destination;
using sb::rules::testing::Fate;
using sb::rules::testing::Packet;

struct Outcome {
    Fate fate = Fate::kAccept;
    std::optional<Destination> dnat;
    bool masquerade = false;
    double probability = 1.0;
    std::vector<std::pair<std::string, IpAddress>> recent_sets;  // list name, source
    std::vector<std::string> chains;                             // visited, for failure messages

    std::string describe() const;
};

class Tracer {
  public:
    // `local_addresses`: the node's own addresses (addrtype LOCAL);
    // loopback addresses always count as local.
    Tracer(const FamilyModel& model, std::vector<IpAddress> local_addresses);

    // Precondition: packet addresses are of the model's family.
    std::vector<Outcome> trace(const Packet& packet) const;

    // Records an outcome's `-m recent --set` entries.
    void remember(const Outcome& outcome);

    struct State;  // one path through the hooks (internal)

  private:
    Outcome run(const Packet& packet, const std::vector<bool>& decisions,
                std::vector<double>& probabilities) const;
    bool run_builtin(const Table& table, const std::string& builtin, State& s) const;
    int eval_chain(const Table& table, const std::string& name, State& s, int depth) const;
    int eval_rule(const Table& table, const Rule& rule, State& s, int depth) const;
    bool is_local(const IpAddress& address) const;

    const FamilyModel& model_;
    std::vector<IpAddress> local_;
    std::map<std::string, std::set<IpAddress>> recent_;
};

}  // namespace sb::rules::iptables::testing
