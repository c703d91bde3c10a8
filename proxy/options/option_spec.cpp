#include "proxy/options/option_spec.h"

#include "base/go_duration.h"
#include "proxy/options/command_line.h"

namespace sb::proxy {

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
