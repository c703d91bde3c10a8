// The walk a Pod's stub resolver makes for one name (glibc's res_nsearch):
// which names it asks, in which order, and where it stops. What `switchboard
// lookup` explains (docs/pod-commands.md, "lookup"). Pure: the asking is the
// caller's (`ask`), so the rules are unit-tested without sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dns/wire/wire.h"

namespace sb::dns {

// glibc's default ndots and its cap (RES_MAXNDOTS).
inline constexpr int kDefaultNdots = 1;
inline constexpr int kMaxNdots = 15;

// ndots from resolv.conf options ("ndots:5"), the last one winning as in
// glibc; kDefaultNdots without one, capped at kMaxNdots.
int ndots_from_options(const std::vector<std::string>& options);

// The order the resolver tries names in.
enum class SearchOrder {
    kAbsolute,      // a trailing dot: the name only
    kAsGivenFirst,  // at least ndots dots: the name, then the search list
    kSearchFirst,   // fewer: the search list, then the name
};
const char* to_string(SearchOrder order);

// What one asked name got.
struct LookupAnswer {
    enum class Outcome {
        kAnswer,    // NOERROR with records of the type asked (or a CNAME to them)
        kNoData,    // NOERROR without them: glibc goes on to the next name
        kNXDomain,  // goes on
        kServFail,  // goes on (glibc counts it and tries the next name)
        kRefused,   // stops (NO_RECOVERY)
        kNoReply,   // a timeout or an unreachable server: stops (TRY_AGAIN)
    };
    Outcome outcome = Outcome::kNoReply;
    std::string source;  // who answered: "zone", "upstream 192.0.2.53:53", ...
    std::vector<Record> answers;
    std::string detail;  // why there was no reply
};
const char* to_string(LookupAnswer::Outcome outcome);

// The outcome a reply to `qtype` has: kAnswer when an answer record has that
// type (or the reply is a CNAME chain and the type is CNAME).
LookupAnswer::Outcome outcome_of(const Message& reply, uint16_t qtype);

struct LookupStep {
    std::string name;  // text, with its trailing dot
    LookupAnswer answer;
};

struct LookupWalk {
    std::string qname;  // as given
    uint16_t qtype = 0;
    int ndots = kDefaultNdots;
    size_t dots = 0;  // in the name as given, without a trailing dot
    SearchOrder order = SearchOrder::kSearchFirst;
    std::vector<std::string> candidates;  // text, with trailing dots, in order
    std::vector<LookupStep> steps;        // the names asked, a prefix of candidates
    std::optional<size_t> answered;       // the step that answered
};

// Asks one name (wire form) for `qtype`.
using LookupAsk = std::function<LookupAnswer(const std::string& wire_name, uint16_t qtype)>;

// The resolver's candidates for `qname` (text; a trailing dot makes it
// absolute) with `searches` (text domains, "." being the root) and `ndots`:
// names over 255 bytes are left out, a name the list yields twice is asked
// once. Error (kInvalidArgument) when `qname` is not a DNS name.
Result<std::vector<std::string>> lookup_candidates(const std::string& qname,
                                                   const std::vector<std::string>& searches,
                                                   int ndots, SearchOrder* order = nullptr,
                                                   size_t* dots = nullptr);

// Asks the candidates in order until one answers or one stops the walk.
Result<LookupWalk> walk_lookup(const std::string& qname, uint16_t qtype,
                               const std::vector<std::string>& searches, int ndots,
                               const LookupAsk& ask);

}  // namespace sb::dns
