// The value checks that rows of more than one group of the option table
// (proxy/options/rows_*.cpp) share, so that a value is refused with the same
// words whichever row reads it. Pure functions of their arguments; the
// store_* templates write only the member of Options they name.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "proxy/options/option_spec.h"

namespace sb::proxy {

// kInvalidArgument with `message`, which the caller prefixes with the
// value's Origin.
Error invalid_value(std::string message);

// "one of a, b, c" membership with the contract's wording.
Status check_one_of(std::string_view value, std::initializer_list<std::string_view> allowed);

// Comma-separated CIDRs; host bits are allowed, as kube-proxy's
// ParseCIDRSloppy allows them.
Result<std::vector<Prefix>> parse_prefix_list(std::string_view text);

// pflag's boolean spellings (parse_bool_text), refused with the flag's words.
Result<bool> parse_bool_value(std::string_view text);

// The row of a bool stored in `member` of Options.
template <bool Options::*member>
Status store_bool(std::string_view text, ApplyContext& context) {
    auto value = parse_bool_value(text);
    if (!value) return value.error();
    context.options.*member = *value;
    return {};
}

// The row of a bool stored in `member` of the `group` of Options
// (backend.masquerade_all, conntrack.tcp_be_liberal, dns.autopath).
template <auto group, auto member>
Status store_bool_in(std::string_view text, ApplyContext& context) {
    auto value = parse_bool_value(text);
    if (!value) return value.error();
    (context.options.*group).*member = *value;
    return {};
}

}  // namespace sb::proxy
