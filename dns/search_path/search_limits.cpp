#include "dns/search_path/search_limits.h"

#include <algorithm>

namespace sb::dns {

bool fit_search_limits(std::vector<std::string>& list, SearchLength length) {
    const size_t before = list.size();
    if (list.size() > kMaxSearchPaths) list.resize(kMaxSearchPaths);
    std::erase_if(list,
                  [&](const std::string& entry) { return length(entry) > kMaxSearchDomainChars; });
    // The joined line (domains separated by one space) cut from its end.
    size_t line = 0;
    for (const auto& entry : list) line += length(entry) + 1;
    if (!list.empty()) --line;
    while (line > kMaxSearchListChars && !list.empty()) {
        line -= std::min(line, length(list.back()) + 1);
        list.pop_back();
    }
    return list.size() != before;
}

}  // namespace sb::dns
