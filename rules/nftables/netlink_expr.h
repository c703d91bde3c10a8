// The expression compiler: a model Rule as the libnftnl expressions nft
// would generate for it (`nft --debug=netlink` shows the same lists), with
// the registers of every concatenation laid out in one place (RegisterRun
// in netlink_expr.cpp). Pure: it builds an nftnl_rule, sends nothing.
#pragma once

#include "rules/nftables/model.h"

struct nftnl_rule;

namespace sb::rules::nftables {

// Appends the expressions of `rule`, in order, to `out` (which owns them).
void add_expressions(nftnl_rule* out, const Rule& rule);

}  // namespace sb::rules::nftables
