#include "rules/nftables/element_map.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace sb::rules::nftables {
namespace {

using ChunkOffset = std::pair<size_t, size_t>;  // chunk, offset

template <class Address>
Address to_address(const IpAddress& ip);
template <>
uint32_t to_address<uint32_t>(const IpAddress& ip) {
    return ip.v4_host_order();
}
template <>
IpAddress to_address<IpAddress>(const IpAddress& ip) {
    return ip;
}
IpAddress from_address(uint32_t host_order) {
    return IpAddress::v4(host_order);
}
IpAddress from_address(const IpAddress& ip) {
    return ip;
}

// Host-order IPv4 addresses compare as IpAddress's bytes do, so narrow and
// wide records are in the same order as their ElementKeys.
template <class R>
auto key_of(const R& r) {
    return std::tie(r.a, r.b, r.proto, r.port, r.slot);
}
template <class R>
bool key_less(const R& x, const R& y) {
    return key_of(x) < key_of(y);
}

template <class R>
R key_record(const ElementKey& key) {
    R r;
    r.a = to_address<decltype(r.a)>(key.a);
    r.b = to_address<decltype(r.b)>(key.b);
    r.proto = key.proto;
    r.port = key.port;
    r.slot = key.slot;
    return r;
}

template <class R>
ElementMap::value_type decode(const R& r, const std::string& chain) {
    return {ElementKey{from_address(r.a), from_address(r.b), r.proto, r.port, r.slot},
            Verdict(r.kind, chain, from_address(r.address), r.value_port)};
}

bool fits_narrow(const ElementKey& key) {
    return key.a.is_v4() && key.b.is_v4();
}

template <class R>
ChunkOffset lower_bound_in(const ElementMap::Chunks<R>& chunks, const R& probe) {
    // The first chunk whose last record is not below the probe.
    auto chunk = std::partition_point(chunks.begin(), chunks.end(), [&](const std::vector<R>& c) {
        return key_less(c.back(), probe);
    });
    if (chunk == chunks.end()) return {chunks.size(), 0};
    auto at = std::lower_bound(chunk->begin(), chunk->end(), probe, key_less<R>);
    return {static_cast<size_t>(chunk - chunks.begin()), static_cast<size_t>(at - chunk->begin())};
}

template <class R>
ChunkOffset insert_into(ElementMap::Chunks<R>& chunks, ChunkOffset at, const R& record) {
    constexpr size_t kChunk = ElementMap::kChunk;
    if (chunks.empty()) {
        chunks.emplace_back().push_back(record);
        return {0, 0};
    }
    if (at.first == chunks.size()) at = {chunks.size() - 1, chunks.back().size()};
    if (chunks[at.first].size() == kChunk) {
        if (at.first + 1 == chunks.size() && at.second == kChunk) {
            // Appending past the last record: a new chunk keeps the full
            // ones full (ordered fills, the kernel's dumps).
            chunks.emplace_back().push_back(record);
            return {at.first + 1, 0};
        }
        std::vector<R>& full = chunks[at.first];
        std::vector<R> upper(full.begin() + kChunk / 2, full.end());
        full.erase(full.begin() + kChunk / 2, full.end());
        chunks.insert(chunks.begin() + static_cast<std::ptrdiff_t>(at.first) + 1, std::move(upper));
        if (at.second > kChunk / 2) at = {at.first + 1, at.second - kChunk / 2};
    }
    std::vector<R>& chunk = chunks[at.first];
    chunk.insert(chunk.begin() + static_cast<std::ptrdiff_t>(at.second), record);
    return at;
}

template <class R>
void erase_from(ElementMap::Chunks<R>& chunks, ChunkOffset at) {
    constexpr size_t kChunk = ElementMap::kChunk;
    std::vector<R>& chunk = chunks[at.first];
    chunk.erase(chunk.begin() + static_cast<std::ptrdiff_t>(at.second));
    const auto next = chunks.begin() + static_cast<std::ptrdiff_t>(at.first) + 1;
    if (chunk.empty()) {
        chunks.erase(next - 1);
    } else if (next != chunks.end() && chunk.size() + next->size() <= kChunk / 2) {
        // Merging small neighbours bounds the chunk count by the elements.
        chunk.insert(chunk.end(), next->begin(), next->end());
        chunks.erase(next);
    } else if (chunk.size() < chunk.capacity() / 4) {
        chunk.shrink_to_fit();  // after mass erasure, memory follows the elements
    }
}

// Frees each old chunk once copied, so that the peak is one map plus a
// chunk, not two maps.
template <class R>
void repack(ElementMap::Chunks<R>& chunks) {
    ElementMap::Chunks<R> packed;
    for (std::vector<R>& chunk : chunks) {
        for (const R& r : chunk) {
            if (packed.empty() || packed.back().size() == ElementMap::kChunk) {
                packed.emplace_back().reserve(ElementMap::kChunk);
            }
            packed.back().push_back(r);
        }
        std::vector<R>().swap(chunk);
    }
    if (!packed.empty()) packed.back().shrink_to_fit();
    chunks = std::move(packed);
}

}  // namespace

void ElementMap::compact() {
    if (wide_) {
        repack(wide_chunks_);
    } else {
        repack(narrow_chunks_);
    }
}

void ElementMap::clear() {
    *this = ElementMap{};
}

ElementMap::const_iterator ElementMap::begin() const {
    return {this, Position{0, 0}};
}
ElementMap::const_iterator ElementMap::end() const {
    return {this, Position{chunk_count(), 0}};
}

ElementMap::Position ElementMap::lower_bound(const ElementKey& key) const {
    auto [chunk, offset] = wide_ ? lower_bound_in(wide_chunks_, key_record<WideRecord>(key))
                                 : lower_bound_in(narrow_chunks_, key_record<NarrowRecord>(key));
    return Position{chunk, offset};
}

bool ElementMap::holds(Position at, const ElementKey& key) const {
    if (at.chunk == chunk_count()) return false;
    if (wide_)
        return key_of(wide_chunks_[at.chunk][at.offset]) == key_of(key_record<WideRecord>(key));
    return key_of(narrow_chunks_[at.chunk][at.offset]) == key_of(key_record<NarrowRecord>(key));
}

ElementMap::value_type ElementMap::element(Position at) const {
    if (wide_) {
        const WideRecord& r = wide_chunks_[at.chunk][at.offset];
        return decode(r, chain_name(r.chain));
    }
    const NarrowRecord& r = narrow_chunks_[at.chunk][at.offset];
    return decode(r, chain_name(r.chain));
}

ElementMap::const_iterator ElementMap::find(const ElementKey& key) const {
    if (!wide_ && !fits_narrow(key)) return end();
    const Position at = lower_bound(key);
    return holds(at, key) ? const_iterator{this, at} : end();
}

size_t ElementMap::count(const ElementKey& key) const {
    return find(key) != end() ? 1 : 0;
}

Verdict ElementMap::at(const ElementKey& key) const {
    const_iterator it = find(key);
    if (it == end()) throw std::out_of_range("ElementMap::at: no such element");
    return it->second;
}

std::pair<ElementMap::const_iterator, bool> ElementMap::emplace(const ElementKey& key,
                                                                const Verdict& value) {
    if (!wide_ && !(fits_narrow(key) && value.address.is_v4())) widen();
    const Position at = lower_bound(key);
    if (holds(at, key)) return {const_iterator{this, at}, false};
    return {const_iterator{this, insert_at(at, key, value)}, true};
}

void ElementMap::insert_or_assign(const ElementKey& key, const Verdict& value) {
    if (!wide_ && !(fits_narrow(key) && value.address.is_v4())) widen();
    Position at = lower_bound(key);
    if (holds(at, key)) {
        erase_at(at);
        at = lower_bound(key);
    }
    insert_at(at, key, value);
}

size_t ElementMap::erase(const ElementKey& key) {
    if (!wide_ && !fits_narrow(key)) return 0;
    const Position at = lower_bound(key);
    if (!holds(at, key)) return 0;
    erase_at(at);
    return 1;
}

bool ElementMap::operator==(const ElementMap& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin(), other.end());
}

void ElementMap::widen() {
    for (const std::vector<NarrowRecord>& narrow : narrow_chunks_) {
        std::vector<WideRecord>& wide = wide_chunks_.emplace_back();
        wide.reserve(narrow.size());
        for (const NarrowRecord& n : narrow) {
            WideRecord w;
            w.a = from_address(n.a);
            w.b = from_address(n.b);
            w.address = from_address(n.address);
            w.slot = n.slot;
            w.chain = n.chain;
            w.port = n.port;
            w.value_port = n.value_port;
            w.proto = n.proto;
            w.kind = n.kind;
            wide.push_back(w);
        }
    }
    narrow_chunks_ = {};
    wide_ = true;
}

ElementMap::Position ElementMap::insert_at(Position at, const ElementKey& key,
                                           const Verdict& value) {
    const uint32_t chain = value.chain.empty() ? 0 : chain_id(value.chain);
    auto fill = [&](auto record) {
        record.address = to_address<decltype(record.address)>(value.address);
        record.chain = chain;
        record.value_port = value.port;
        record.kind = value.kind;
        return record;
    };
    const auto [chunk, offset] =
        wide_ ? insert_into(wide_chunks_, {at.chunk, at.offset}, fill(key_record<WideRecord>(key)))
              : insert_into(narrow_chunks_, {at.chunk, at.offset},
                            fill(key_record<NarrowRecord>(key)));
    ++size_;
    return Position{chunk, offset};
}

void ElementMap::erase_at(Position at) {
    if (wide_) {
        release_chain(wide_chunks_[at.chunk][at.offset].chain);
        erase_from(wide_chunks_, {at.chunk, at.offset});
    } else {
        release_chain(narrow_chunks_[at.chunk][at.offset].chain);
        erase_from(narrow_chunks_, {at.chunk, at.offset});
    }
    --size_;
}

uint32_t ElementMap::chain_id(const std::string& name) {
    if (auto it = chain_ids_.find(name); it != chain_ids_.end()) {
        ++chains_[it->second - 1].refs;
        return it->second;
    }
    uint32_t id;
    if (!free_chain_ids_.empty()) {
        id = free_chain_ids_.back();
        free_chain_ids_.pop_back();
        chains_[id - 1] = ChainName{name, 1};
    } else {
        chains_.push_back(ChainName{name, 1});
        id = static_cast<uint32_t>(chains_.size());
    }
    chain_ids_.emplace(name, id);
    return id;
}

void ElementMap::release_chain(uint32_t id) {
    if (id == 0) return;
    ChainName& c = chains_[id - 1];
    if (--c.refs > 0) return;
    chain_ids_.erase(c.name);
    c.name = {};
    free_chain_ids_.push_back(id);
}

const std::string& ElementMap::chain_name(uint32_t id) const {
    static const std::string kNone;
    return id == 0 ? kNone : chains_[id - 1].name;
}

}  // namespace sb::rules::nftables
