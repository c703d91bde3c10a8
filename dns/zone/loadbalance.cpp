#include "dns/zone/loadbalance.h"

#include <algorithm>
#include <random>

namespace sb::dns {

namespace {

bool is_address(uint16_t rtype) {
    return rtype == type::kA || rtype == type::kAAAA;
}

void shuffle_section(std::vector<Record>& records, std::mt19937_64& random) {
    if (records.size() < 2) return;
    uint16_t first = records.front().rtype;
    bool all_same = std::all_of(records.begin(), records.end(),
                                [first](const Record& r) { return r.rtype == first; });
    if (all_same) {
        if (is_address(first)) std::shuffle(records.begin(), records.end(), random);
        return;
    }
    std::vector<Record> cnames, addresses, mx, rest;
    for (auto& record : records) {
        auto& bucket = record.rtype == type::kCNAME ? cnames
                       : is_address(record.rtype)   ? addresses
                       : record.rtype == type::kMX  ? mx
                                                    : rest;
        bucket.push_back(std::move(record));
    }
    std::shuffle(addresses.begin(), addresses.end(), random);
    std::shuffle(mx.begin(), mx.end(), random);
    records.clear();
    for (auto* bucket : {&cnames, &rest, &addresses, &mx}) {
        std::move(bucket->begin(), bucket->end(), std::back_inserter(records));
    }
}

}  // namespace

void load_balance(Message& reply, uint64_t seed) {
    if (reply.header.rcode != static_cast<uint8_t>(Rcode::kNoError)) return;
    if (!reply.questions.empty() &&
        (reply.questions[0].qtype == type::kAXFR || reply.questions[0].qtype == type::kIXFR)) {
        return;
    }
    std::mt19937_64 random(seed);
    shuffle_section(reply.answers, random);
    shuffle_section(reply.authority, random);
    shuffle_section(reply.additional, random);
}

}  // namespace sb::dns
