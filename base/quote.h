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

// `text` with every control character (a newline inside a YAML string, a
// library's message quoting one) replaced by '?': a message stays one line.
// Not cut. Pure.
std::string one_line(std::string_view text);

}  // namespace sb
