#include "base/quote.h"

namespace sb {

std::string quote_for_message(std::string_view value) {
    constexpr size_t kLimit = 200;
    std::string shown(value.substr(0, kLimit));
    for (char& c : shown) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) c = '?';
    }
    return "\"" + shown + "\"";
}

}  // namespace sb
