// The thin kernel edge of the nftables backend: libnftnl + libmnl on one
// NETLINK_NETFILTER socket. apply() sends a Delta as ONE batch
// (NFNL_MSG_BATCH_BEGIN ... END), which the kernel commits atomically or not
// at all; read_table() lists switchboard's table back for drift repair.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

class NetlinkSocket {
  public:
    static Result<std::unique_ptr<NetlinkSocket>> open();
    ~NetlinkSocket();
    NetlinkSocket(const NetlinkSocket&) = delete;
    NetlinkSocket& operator=(const NetlinkSocket&) = delete;

    // The table as the kernel has it: chains with their hooks and sets with
    // their types; neither rules nor elements are read (a dump of a 100k
    // element set costs the kernel seconds: each dump message walks the set
    // from the start), so diff() refills them. nullopt when the table does
    // not exist. Sets of a type switchboard does not create are marked
    // unknown, so diff() replaces them.
    Result<std::optional<Model>> read_table();

    // One transaction: the table is created if missing, then the Delta's
    // steps in order, rules and element values taken from `desired`.
    Status apply(const Delta& delta, const Model& desired);

    // Deletes the entries of the dynamic affinity map `map` that send a client
    // to one of `endpoints` (removed ones), so the client picks a live
    // endpoint at once instead of after its timeout. Returns how many. An
    // entry expiring between the listing and the delete fails the batch; the
    // entries then expire on their own.
    Result<size_t> delete_affinity_entries(
        const std::string& map, IpFamily family,
        const std::vector<std::pair<IpAddress, uint16_t>>& endpoints);

    // Deletes the table (and so everything in it). Idempotent.
    Status delete_table();

    // A small `inet TABLE` table of chains and rules only (no sets) beside
    // switchboard's own, as rules/dns_local's notrack table: replace_table()
    // makes the kernel's table exactly `model` in one transaction (created
    // when missing, whatever it held before dropped); delete_table(TABLE) is
    // idempotent.
    Status replace_table(const std::string& table, const Model& model);
    Status delete_table(const std::string& table);

    // Answers of earlier requests found in the socket and skipped since
    // open() (rules/netlink_answers.h): never charged to a later request.
    size_t stale_answers() const;

  private:
    struct Impl;
    explicit NetlinkSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::rules::nftables
