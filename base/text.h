// Small text helpers that the parsers of every layer share (flags, the
// kube-proxy config file, Corefiles, Kubernetes JSON). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb {

// `text` without the ASCII white space (space, \t, \n, \r, \f, \v) at
// either end.
std::string_view trim(std::string_view text);

// Trimmed and lower-cased (ASCII): node names, as kube-proxy normalises
// --hostname-override.
std::string trim_lower(std::string_view text);

// Splits on commas and trims each item; empty items are dropped
// ("a, b,,c" -> a, b, c).
std::vector<std::string> split_list(std::string_view text);

// A decimal integer (optional '-') in [min, max], the whole of `text`.
// Errors are kInvalidArgument, one line: `"x" is not an integer`, `7 is out
// of range 1-5`.
Result<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max);

}  // namespace sb
