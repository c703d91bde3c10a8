#include "base/quote.h"

#include <fmt/format.h>

namespace sb {

std::string one_line(std::string_view text) {
    std::string shown(text);
    for (char& c : shown) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) c = '?';
    }
    return shown;
}

std::string quote_for_message(std::string_view value) {
    constexpr size_t kLimit = 200;
    return fmt::format("\"{}\"", one_line(value.substr(0, kLimit)));
}

}  // namespace sb
