// The table reader: switchboard's table as the kernel has it, and the
// elements of one of its sets, through GET requests and dumps on a
// rules::NetlinkSocket (rules/kernel/netlink_socket.h). See Channel (rules/nftables/channel.h) for
// what is read and why rules and static elements are not.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "base/result.h"
#include "rules/kernel/netlink_socket.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

// `table` of the inet family (Model::table of the result).
Result<std::optional<Model>> read_table(rules::NetlinkSocket& socket, const std::string& table);

// The kernel's handle of `table` (inet): nullopt when it does not exist.
Result<std::optional<uint64_t>> table_handle(rules::NetlinkSocket& socket,
                                             const std::string& table);

// How many rules `chain` of `table` holds; kNotFound when either is absent.
Result<size_t> rule_count(rules::NetlinkSocket& socket, const std::string& table,
                          const std::string& chain);

Result<ElementMap> dump_elements(rules::NetlinkSocket& socket, const std::string& table,
                                 const Set& set);

}  // namespace sb::rules::nftables
