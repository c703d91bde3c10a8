#include "dns/zone/hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "dns/wire/names.h"

namespace sb::dns {

namespace {

// Splits on spaces and tabs (hosts(5) fields).
std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (pos < line.size()) {
        size_t start = line.find_first_not_of(" \t\r", pos);
        if (start == std::string_view::npos) break;
        size_t end = line.find_first_of(" \t\r", start);
        if (end == std::string_view::npos) end = line.size();
        out.push_back(line.substr(start, end - start));
        pos = end;
    }
    return out;
}

void add_unique(std::vector<std::string>& list, std::string value) {
    if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(std::move(value));
}

}  // namespace

Result<std::vector<HostsMapping>> parse_hosts(std::string_view text, const ZoneSet& zones) {
    std::vector<HostsMapping> mappings;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (size_t hash = line.find('#'); hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        auto f = fields(line);
        if (f.size() < 2) continue;
        std::string_view address_text = f[0];
        if (size_t percent = address_text.find('%'); percent != std::string_view::npos) {
            address_text = address_text.substr(0, percent);
        }
        auto address = IpAddress::parse(address_text);
        if (!address) continue;
        for (size_t i = 1; i < f.size(); ++i) {
            auto name = name_from_text(f[i]);
            if (!name || name->size() <= 1) continue;  // not a name, or the root
            std::string lower = name_lower(*name);
            if (!zones.matches(lower)) continue;
            if (mappings.size() == kMaxHostsMappings) {
                return make_error(
                    ErrorCode::kInvalidArgument,
                    fmt::format("more than {} name-address pairs", kMaxHostsMappings));
            }
            mappings.push_back(HostsMapping{*address, std::move(lower)});
        }
    }
    return mappings;
}

std::shared_ptr<const HostsTable> HostsTable::build(const HostsOptions& options,
                                                    const std::vector<HostsMapping>& file_mappings,
                                                    int64_t file_mtime_ns) {
    auto table = std::make_shared<HostsTable>();
    table->file_mtime_ns_ = file_mtime_ns;
    table->zones_ = options.zones;
    table->fallthrough_ = options.fallthrough;
    table->fallthrough_unsupported_ = options.fallthrough_unsupported;
    table->ttl_ = options.ttl;
    std::set<std::pair<std::string, std::string>> seen;  // (name, rdata)
    auto add = [&](const HostsMapping& m) {
        std::string rdata = rdata_address(m.address);
        if (!seen.emplace(m.name, rdata).second) return;
        ++table->mapping_count_;
        Addresses& addresses = table->by_name_[m.name];
        (m.address.is_v4() ? addresses.v4 : addresses.v6).push_back(std::move(rdata));
        if (options.reverse) add_unique(table->by_reverse_[reverse_name(m.address)], m.name);
    };
    for (const auto& m : file_mappings) add(m);
    for (const auto& m : options.inline_mappings) add(m);
    return table;
}

HostsTable::Verdict HostsTable::answer(const Question& question, std::string_view lower_name,
                                       std::vector<Record>& answers) const {
    const std::string key(lower_name);
    if (question.qtype == type::kPTR) {
        // PTRs answer wherever asked (reverse zones need not be the
        // plugin's); an address it does not have is always the next's.
        auto names = by_reverse_.find(key);
        if (names == by_reverse_.end()) return Verdict::kNext;
        for (const auto& name : names->second) {
            answers.push_back(Record{question.name, type::kPTR, kClassIN, ttl_, name});
        }
        return Verdict::kReply;
    }
    if (!zones_.matches(lower_name)) return Verdict::kNext;
    const bool address_type = question.qtype == type::kA || question.qtype == type::kAAAA;
    if (!address_type && fallthrough_unsupported_ && fallthrough_ &&
        fallthrough_->matches(lower_name)) {
        return Verdict::kNext;
    }
    auto found = by_name_.find(key);
    if (found == by_name_.end()) {
        if (fallthrough_ && fallthrough_->matches(lower_name)) return Verdict::kNext;
        // CoreDNS: NXDOMAIN would need an SOA the hosts plugin has not.
        return Verdict::kServFail;
    }
    const std::vector<std::string>* rdatas = question.qtype == type::kA      ? &found->second.v4
                                             : question.qtype == type::kAAAA ? &found->second.v6
                                                                             : nullptr;
    if (rdatas) {
        for (const auto& rdata : *rdatas) {
            answers.push_back(Record{question.name, question.qtype, kClassIN, ttl_, rdata});
        }
    }
    return Verdict::kReply;
}

}  // namespace sb::dns
