// Quoting a value inside a one-line error or warning: the value may come
// from a flag, a file or the network, so it is cut at 200 bytes and its
// control characters (newline included) are shown as '?', which keeps
// "one line naming the field" true whatever the value holds.
#pragma once

#include <string>
#include <string_view>

namespace sb {

// "\"value\"" as described above. Pure.
std::string quote_for_message(std::string_view value);

}  // namespace sb
