#include "proxy/options/option_spec.h"

#include "base/go_duration.h"

namespace sb::proxy {

std::optional<bool> parse_bool_text(std::string_view text) {
    for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
        if (text == yes) return true;
    }
    for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
        if (text == no) return false;
    }
    return std::nullopt;
}

bool is_zero_text(ValueKind kind, std::string_view text) {
    if (text.empty()) return true;
    switch (kind) {
        case ValueKind::kBool:
            return parse_bool_text(text) == false;
        case ValueKind::kInt:
            return text == "0";
        case ValueKind::kDuration: {
            auto duration = parse_go_duration(text);
            return duration && duration->count() == 0;
        }
        case ValueKind::kString:
            // Numbers in string-typed fields (clientConnection.qps) too.
            return text == "0" || text == "0.0";
        case ValueKind::kList:
        case ValueKind::kMap:
            return false;
    }
    return false;
}

}  // namespace sb::proxy
