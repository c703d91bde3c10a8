// The real Channel (rules/nftables/channel.h): libnftnl + libmnl on one
// NETLINK_NETFILTER socket. apply() sends a Delta as ONE batch
// (NFNL_MSG_BATCH_BEGIN ... END), which the kernel commits atomically or not
// at all. The jobs under it, one file each: rules/kernel/netlink_socket (the
// exchange) and rules/kernel/nft_batch (one transaction), shared with the
// rest of rules/; netlink_reader (read_table, dump_elements), netlink_batch
// (a Delta's messages), netlink_expr (rules to expressions), netlink_encoding (values
// to numbers and bytes). Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "rules/kernel/netlink_socket.h"
#include "rules/nftables/channel.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

class NetlinkSocket final : public Channel {
  public:
    // A channel to `table` (of the inet family): read_table(), dump_elements()
    // and delete_table() concern it; apply() writes the desired model's.
    static Result<std::unique_ptr<NetlinkSocket>> open(std::string table = kTableName);
    ~NetlinkSocket() override;
    NetlinkSocket(const NetlinkSocket&) = delete;
    NetlinkSocket& operator=(const NetlinkSocket&) = delete;

    Result<std::optional<Model>> read_table() override;
    Status apply(const Delta& delta, const Model& desired) override;
    Result<std::optional<uint64_t>> table_handle() override;
    Result<size_t> rule_count(const std::string& chain) override;
    Result<ElementMap> dump_elements(const Set& set) override;
    Status delete_table() override;
    size_t stale_answers() const override;

    // A small `inet TABLE` table of chains and rules only (no sets) beside
    // switchboard's own, as rules/dns_local's notrack table: replace_table()
    // makes the kernel's table exactly `model` in one transaction (created
    // when missing, whatever it held before dropped); delete_table(TABLE) is
    // idempotent.
    Status replace_table(const std::string& table, const Model& model);
    Status delete_table(const std::string& table);

  private:
    NetlinkSocket(rules::NetlinkSocket socket, std::string table);
    rules::NetlinkSocket socket_;
    std::string table_;
};

}  // namespace sb::rules::nftables
