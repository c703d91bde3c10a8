// The table reader: switchboard's table as the kernel has it, and the
// elements of one of its sets, through GET requests and dumps on a
// NetlinkConnection. See Channel (rules/nftables/channel.h) for what is read
// and why rules and static elements are not.
#pragma once

#include <map>
#include <optional>

#include "base/result.h"
#include "rules/nftables/model.h"
#include "rules/nftables/netlink_socket.h"

namespace sb::rules::nftables {

Result<std::optional<Model>> read_table(NetlinkConnection& connection);

Result<std::map<ElementKey, Verdict>> dump_elements(NetlinkConnection& connection, const Set& set);

}  // namespace sb::rules::nftables
