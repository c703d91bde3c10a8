#include "dns/search_path/lookup_walk.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/quote.h"

namespace sb::dns {

int ndots_from_options(const std::vector<std::string>& options) {
    int ndots = kDefaultNdots;
    for (const auto& option : options) {
        if (option.rfind("ndots:", 0) != 0) continue;
        int value = 0;
        const char* begin = option.data() + 6;
        const char* end = option.data() + option.size();
        auto [ptr, error] = std::from_chars(begin, end, value);
        // glibc's atoi: a bad value reads as 0... as far as it is a number.
        if (error != std::errc() || ptr == begin) value = 0;
        ndots = std::clamp(value, 0, kMaxNdots);
    }
    return ndots;
}

const char* to_string(SearchOrder order) {
    switch (order) {
        case SearchOrder::kAbsolute:
            return "absolute";
        case SearchOrder::kAsGivenFirst:
            return "as-given-first";
        case SearchOrder::kSearchFirst:
            return "search-first";
    }
    return "search-first";
}

const char* to_string(LookupAnswer::Outcome outcome) {
    switch (outcome) {
        case LookupAnswer::Outcome::kAnswer:
            return "answer";
        case LookupAnswer::Outcome::kNoData:
            return "NODATA";
        case LookupAnswer::Outcome::kNXDomain:
            return "NXDOMAIN";
        case LookupAnswer::Outcome::kServFail:
            return "SERVFAIL";
        case LookupAnswer::Outcome::kRefused:
            return "REFUSED";
        case LookupAnswer::Outcome::kNoReply:
            return "no reply";
    }
    return "no reply";
}

LookupAnswer::Outcome outcome_of(const Message& reply, uint16_t qtype) {
    switch (static_cast<Rcode>(reply.header.rcode)) {
        case Rcode::kNoError:
            break;
        case Rcode::kNXDomain:
            return LookupAnswer::Outcome::kNXDomain;
        case Rcode::kServFail:
            return LookupAnswer::Outcome::kServFail;
        default:
            return LookupAnswer::Outcome::kRefused;
    }
    const bool answered = std::any_of(reply.answers.begin(), reply.answers.end(),
                                      [&](const Record& record) { return record.rtype == qtype; });
    return answered ? LookupAnswer::Outcome::kAnswer : LookupAnswer::Outcome::kNoData;
}

Result<std::vector<std::string>> lookup_candidates(const std::string& qname,
                                                   const std::vector<std::string>& searches,
                                                   int ndots, SearchOrder* order, size_t* dots) {
    const bool absolute = !qname.empty() && qname.back() == '.';
    const std::string base = absolute ? qname.substr(0, qname.size() - 1) : qname;
    auto wire = name_from_text(base);
    // `base` keeps no dot at its end: "a.." has an empty label.
    if (!wire || base.empty() || base.back() == '.') {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{} is not a DNS name", quote_for_message(qname)));
    }
    const size_t count = static_cast<size_t>(std::count(base.begin(), base.end(), '.'));
    const SearchOrder chosen = absolute                              ? SearchOrder::kAbsolute
                               : count >= static_cast<size_t>(ndots) ? SearchOrder::kAsGivenFirst
                                                                     : SearchOrder::kSearchFirst;
    if (order) *order = chosen;
    if (dots) *dots = count;
    std::vector<std::string> names;
    auto add = [&](const std::string& text) {
        if (!name_from_text(text)) return;  // over 255 bytes: no resolver asks it
        const std::string lower = name_lower(*name_from_text(text));
        for (const auto& other : names) {
            if (name_lower(*name_from_text(other)) == lower) return;
        }
        names.push_back(text);
    };
    const std::string as_given = base + ".";
    if (chosen != SearchOrder::kSearchFirst) add(as_given);
    if (chosen != SearchOrder::kAbsolute) {
        for (const auto& search : searches) {
            std::string domain = search;
            while (!domain.empty() && domain.back() == '.') domain.pop_back();
            add(domain.empty() ? as_given : base + "." + domain + ".");
        }
    }
    if (chosen == SearchOrder::kSearchFirst) add(as_given);
    return names;
}

Result<LookupWalk> walk_lookup(const std::string& qname, uint16_t qtype,
                               const std::vector<std::string>& searches, int ndots,
                               const LookupAsk& ask) {
    LookupWalk walk;
    walk.qname = qname;
    walk.qtype = qtype;
    walk.ndots = ndots;
    auto candidates = lookup_candidates(qname, searches, ndots, &walk.order, &walk.dots);
    if (!candidates) return candidates.error();
    walk.candidates = std::move(*candidates);
    for (const auto& name : walk.candidates) {
        LookupStep step{name, ask(*name_from_text(name), qtype)};
        const auto outcome = step.answer.outcome;
        walk.steps.push_back(std::move(step));
        if (outcome == LookupAnswer::Outcome::kAnswer) {
            walk.answered = walk.steps.size() - 1;
            break;
        }
        if (outcome == LookupAnswer::Outcome::kRefused ||
            outcome == LookupAnswer::Outcome::kNoReply) {
            break;
        }
    }
    return walk;
}

}  // namespace sb::dns
