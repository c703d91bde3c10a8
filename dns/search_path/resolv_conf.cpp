#include "dns/search_path/resolv_conf.h"

#include <algorithm>

#include "base/file_text.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// The next blank-separated word of `line` from `pos`, moving `pos` past it.
std::string_view next_word(std::string_view line, size_t& pos) {
    while (pos < line.size() && is_blank(line[pos])) ++pos;
    size_t start = pos;
    while (pos < line.size() && !is_blank(line[pos])) ++pos;
    return line.substr(start, pos - start);
}

// Calls f(line) for each line of `text`, without its newline.
template <typename F>
void for_each_line(std::string_view text, F&& f) {
    while (!text.empty()) {
        size_t newline = text.find('\n');
        f(text.substr(0, newline));
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    }
}

}  // namespace

std::vector<HostPort> parse_resolv_conf_nameservers(std::string_view text) {
    std::vector<HostPort> result;
    for_each_line(text, [&](std::string_view line) {
        size_t pos = 0;
        if (next_word(line, pos) != "nameserver") return;
        auto address = IpAddress::parse(next_word(line, pos));
        if (address) result.push_back(HostPort{*address, 53});
    });
    return result;
}

std::string_view resolv_conf_option_name(std::string_view option) {
    return option.substr(0, option.find(':'));
}

KubeletResolvConf parse_resolv_conf_as_kubelet(std::string_view text) {
    KubeletResolvConf result;
    for_each_line(text, [&](std::string_view line) {
        // kubelet cuts a line at its first comment character.
        line = line.substr(0, line.find_first_of("#;"));
        size_t pos = 0;
        const std::string_view keyword = next_word(line, pos);
        if (keyword == "nameserver") {
            std::string_view address = next_word(line, pos);
            if (!address.empty()) result.nameservers.emplace_back(address);
            return;
        }
        if (keyword == "search") {
            result.searches.clear();
            for (std::string_view word = next_word(line, pos); !word.empty();
                 word = next_word(line, pos)) {
                if (word == ".") continue;
                if (word.back() == '.') word.remove_suffix(1);
                result.searches.emplace_back(word);
            }
            return;
        }
        if (keyword != "options") return;
        for (std::string_view word = next_word(line, pos); !word.empty();
             word = next_word(line, pos)) {
            auto same = std::find_if(
                result.options.begin(), result.options.end(), [&](const std::string& option) {
                    return resolv_conf_option_name(option) == resolv_conf_option_name(word);
                });
            if (same == result.options.end()) {
                result.options.emplace_back(word);
            } else {
                *same = std::string(word);
            }
        }
    });
    return result;
}

std::vector<std::string> parse_resolv_conf_searches(std::string_view text) {
    std::vector<std::string> result;
    for (const auto& word : parse_resolv_conf_as_kubelet(text).searches) {
        // kubelet's DNS1123SubdomainMaxLength; name_from_text checks the
        // labels (a second trailing dot is an empty one).
        if (word.empty() || word.back() == '.' || word.size() > 253 || !name_from_text(word))
            continue;
        if (result.size() < kMaxResolvConfSearches) result.push_back(word);
    }
    return result;
}

std::vector<std::string> resolv_conf_searches(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) return {};
    return parse_resolv_conf_searches(*text);
}

std::vector<HostPort> resolv_conf_nameservers(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) return {};
    return parse_resolv_conf_nameservers(*text);
}

}  // namespace sb::dns
