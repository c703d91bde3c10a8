#include "dns/cache.h"

#include <algorithm>

namespace sb::dns {

std::string Cache::key_of(const Question& question) {
    std::string key = name_lower(question.name);
    key.push_back(static_cast<char>(question.qtype >> 8));
    key.push_back(static_cast<char>(question.qtype & 0xff));
    key.push_back(static_cast<char>(question.qclass >> 8));
    key.push_back(static_cast<char>(question.qclass & 0xff));
    return key;
}

std::optional<CachedAnswer> Cache::lookup(const Question& question, Clock::time_point now) {
    std::string key = key_of(question);
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end() || it->second->expires <= now) {
        if (it != index_.end()) {
            lru_.erase(it->second);
            index_.erase(it);
        }
        misses_.fetch_add(1, std::memory_order_relaxed);
        return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    hits_.fetch_add(1, std::memory_order_relaxed);
    const Entry& entry = *it->second;
    auto age = static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::seconds>(now - entry.stored).count());
    CachedAnswer answer = entry.answer;
    for (auto* section : {&answer.answers, &answer.authority, &answer.additional}) {
        for (auto& record : *section) record.ttl = record.ttl > age ? record.ttl - age : 0;
    }
    return answer;
}

void Cache::insert(const Question& question, const Message& reply, Clock::time_point now) {
    auto rcode = static_cast<Rcode>(reply.header.rcode);
    if (reply.header.tc || (rcode != Rcode::kNoError && rcode != Rcode::kNXDomain)) return;
    if (reply.edns && reply.edns->extended_rcode != 0) return;
    bool negative = rcode == Rcode::kNXDomain || reply.answers.empty();
    uint32_t ttl = kMaxTtl;
    if (negative) {
        ttl = kNegativeTtl;
        for (const auto& record : reply.authority) {
            if (record.rtype != type::kSOA) continue;
            ttl = std::min(record.ttl, soa_minimum(record.rdata).value_or(kNegativeTtl));
        }
    } else {
        for (const auto& record : reply.answers) ttl = std::min(ttl, record.ttl);
    }
    ttl = std::min(ttl, kMaxTtl);
    if (ttl == 0) return;

    Entry entry;
    entry.key = key_of(question);
    entry.answer.rcode = reply.header.rcode;
    entry.answer.answers = reply.answers;
    entry.answer.authority = reply.authority;
    entry.answer.additional = reply.additional;
    for (auto* section :
         {&entry.answer.answers, &entry.answer.authority, &entry.answer.additional}) {
        for (auto& record : *section) record.ttl = std::min(record.ttl, ttl);
    }
    entry.stored = now;
    entry.expires = now + std::chrono::seconds(ttl);

    std::lock_guard lock(mutex_);
    auto it = index_.find(entry.key);
    if (it != index_.end()) {
        lru_.erase(it->second);
        index_.erase(it);
    }
    lru_.push_front(std::move(entry));
    index_[lru_.front().key] = lru_.begin();
    while (lru_.size() > capacity_) {
        index_.erase(lru_.back().key);
        lru_.pop_back();
        evictions_.fetch_add(1, std::memory_order_relaxed);
    }
}

size_t Cache::size() const {
    std::lock_guard lock(mutex_);
    return lru_.size();
}

}  // namespace sb::dns
