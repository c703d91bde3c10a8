#include "dns/dns_options.h"

#include <fmt/format.h>

namespace sb::dns {

Result<std::vector<HostPort>> parse_upstreams(std::string_view text) {
    std::vector<HostPort> result;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view item = text.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("empty entry in \"{}\"", text));
        }
        auto parsed = parse_host_port(item, 53);
        if (!parsed) {
            return make_error(ErrorCode::kInvalidArgument, parsed.error().message);
        }
        result.push_back(*parsed);
        start = comma + 1;
    }
    return result;
}

}  // namespace sb::dns
