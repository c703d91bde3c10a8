#include "rules/nftables/element_map.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace sb::rules::nftables {
namespace {

using ChunkOffset = std::pair<size_t, size_t>;  // chunk, offset
using PairRecord = ElementMap::PairRecord;
using BackendRecord = ElementMap::BackendRecord;
using NarrowRecord = ElementMap::NarrowRecord;
using WideRecord = ElementMap::WideRecord;

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

bool zero_v4(const IpAddress& ip) {
    return ip == IpAddress{};
}

// What every shape answers alike: its key (a, b, proto, port, slot; the
// fields a shape lacks are zero), whether an element fits it, a record from
// an element, and the element back. Host-order IPv4 addresses compare as
// IpAddress's bytes do, so records of every shape are in the order of their
// ElementKeys.
template <class R>
struct Shape;

template <>
struct Shape<PairRecord> {
    static auto key(const PairRecord& r) {
        return std::make_tuple(r.a, r.b, uint8_t{0}, uint16_t{0}, uint32_t{0});
    }
    static bool fits_key(const ElementKey& k) {
        return k.a.is_v4() && k.b.is_v4() && k.proto == 0 && k.port == 0 && k.slot == 0;
    }
    static bool fits(const ElementKey& k, const Verdict& v) {
        return fits_key(k) && v == Verdict{};
    }
    static PairRecord make(const ElementKey& k, const Verdict&, uint32_t) {
        return PairRecord{k.a.v4_host_order(), k.b.v4_host_order()};
    }
    static uint32_t chain(const PairRecord&) { return 0; }
    static ElementMap::value_type decode(const PairRecord& r, const std::string&) {
        return {ElementKey{from_address(r.a), from_address(r.b), 0, 0, 0}, Verdict{}};
    }
};

template <>
struct Shape<BackendRecord> {
    static auto key(const BackendRecord& r) {
        return std::make_tuple(r.a, uint32_t{0}, r.proto, r.port, r.slot);
    }
    static bool fits_key(const ElementKey& k) { return k.a.is_v4() && zero_v4(k.b); }
    static bool fits(const ElementKey& k, const Verdict& v) {
        return fits_key(k) && v.kind == VerdictKind::kNone && v.chain.empty() && v.address.is_v4();
    }
    static BackendRecord make(const ElementKey& k, const Verdict& v, uint32_t) {
        return BackendRecord{
            k.a.v4_host_order(), k.slot, v.address.v4_host_order(), k.port, v.port, k.proto};
    }
    static uint32_t chain(const BackendRecord&) { return 0; }
    static ElementMap::value_type decode(const BackendRecord& r, const std::string&) {
        return {ElementKey{from_address(r.a), IpAddress{}, r.proto, r.port, r.slot},
                Verdict(VerdictKind::kNone, {}, from_address(r.address), r.value_port)};
    }
};

template <class Address>
struct Shape<ElementMap::Record<Address>> {
    using R = ElementMap::Record<Address>;
    static auto key(const R& r) { return std::tie(r.a, r.b, r.proto, r.port, r.slot); }
    static bool fits_key(const ElementKey& k) {
        return std::is_same_v<Address, IpAddress> || (k.a.is_v4() && k.b.is_v4());
    }
    static bool fits(const ElementKey& k, const Verdict& v) {
        return fits_key(k) && (std::is_same_v<Address, IpAddress> || v.address.is_v4());
    }
    static R make(const ElementKey& k, const Verdict& v, uint32_t chain) {
        R r;
        r.a = to_address<Address>(k.a);
        r.b = to_address<Address>(k.b);
        r.proto = k.proto;
        r.port = k.port;
        r.slot = k.slot;
        r.address = to_address<Address>(v.address);
        r.chain = chain;
        r.value_port = v.port;
        r.kind = v.kind;
        return r;
    }
    static uint32_t chain(const R& r) { return r.chain; }
    static ElementMap::value_type decode(const R& r, const std::string& chain) {
        return {ElementKey{from_address(r.a), from_address(r.b), r.proto, r.port, r.slot},
                Verdict(r.kind, chain, from_address(r.address), r.value_port)};
    }
};

template <class R>
bool key_less(const R& x, const R& y) {
    return Shape<R>::key(x) < Shape<R>::key(y);
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

// Moves every record of `from` to records of shape T, in order.
template <class T, class F>
ElementMap::Chunks<T> convert(const ElementMap::Chunks<F>& from) {
    ElementMap::Chunks<T> to;
    for (const std::vector<F>& chunk : from) {
        std::vector<T>& out = to.emplace_back();
        out.reserve(chunk.size());
        for (const F& r : chunk) {
            const auto [key, value] = Shape<F>::decode(r, {});
            out.push_back(Shape<T>::make(key, value, Shape<F>::chain(r)));
        }
    }
    return to;
}

}  // namespace

size_t ElementMap::record_size() const {
    return std::visit([](const auto& chunks) { return sizeof(chunks.front().front()); }, records_);
}

size_t ElementMap::chunk_count() const {
    return std::visit([](const auto& chunks) { return chunks.size(); }, records_);
}

size_t ElementMap::chunk_size(size_t chunk) const {
    return std::visit([chunk](const auto& chunks) { return chunks[chunk].size(); }, records_);
}

bool ElementMap::fits_key(const ElementKey& key) const {
    return std::visit(
        [&key](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            return Shape<R>::fits_key(key);
        },
        records_);
}

bool ElementMap::fits(const ElementKey& key, const Verdict& value) const {
    return std::visit(
        [&](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            return Shape<R>::fits(key, value);
        },
        records_);
}

void ElementMap::reshape_for(const ElementKey& key, const Verdict& value) {
    if (size_ == 0) {
        if (Shape<PairRecord>::fits(key, value)) {
            records_ = Chunks<PairRecord>{};
        } else if (Shape<BackendRecord>::fits(key, value)) {
            records_ = Chunks<BackendRecord>{};
        } else if (Shape<NarrowRecord>::fits(key, value)) {
            records_ = Chunks<NarrowRecord>{};
        } else {
            records_ = Chunks<WideRecord>{};
        }
        return;
    }
    if (fits(key, value)) return;
    const bool narrow = Shape<NarrowRecord>::fits(key, value) &&
                        !std::holds_alternative<Chunks<WideRecord>>(records_);
    std::visit(
        [&](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            if (narrow) {
                if constexpr (!std::is_same_v<R, NarrowRecord> && !std::is_same_v<R, WideRecord>) {
                    records_ = convert<NarrowRecord>(chunks);
                }
            } else if constexpr (!std::is_same_v<R, WideRecord>) {
                records_ = convert<WideRecord>(chunks);
            }
        },
        records_);
}

void ElementMap::compact() {
    std::visit([](auto& chunks) { repack(chunks); }, records_);
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
    auto [chunk, offset] = std::visit(
        [&key](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            return lower_bound_in(chunks, Shape<R>::make(key, Verdict{}, 0));
        },
        records_);
    return Position{chunk, offset};
}

bool ElementMap::holds(Position at, const ElementKey& key) const {
    if (at.chunk == chunk_count()) return false;
    return std::visit(
        [&](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            return Shape<R>::key(chunks[at.chunk][at.offset]) ==
                   Shape<R>::key(Shape<R>::make(key, Verdict{}, 0));
        },
        records_);
}

ElementMap::value_type ElementMap::element(Position at) const {
    return std::visit(
        [&](const auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            const R& r = chunks[at.chunk][at.offset];
            return Shape<R>::decode(r, chain_name(Shape<R>::chain(r)));
        },
        records_);
}

ElementMap::const_iterator ElementMap::find(const ElementKey& key) const {
    if (!fits_key(key)) return end();
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
    reshape_for(key, value);
    const Position at = lower_bound(key);
    if (holds(at, key)) return {const_iterator{this, at}, false};
    return {const_iterator{this, insert_at(at, key, value)}, true};
}

void ElementMap::insert_or_assign(const ElementKey& key, const Verdict& value) {
    reshape_for(key, value);
    Position at = lower_bound(key);
    if (holds(at, key)) {
        erase_at(at);
        // The map may have emptied and taken another shape on the way.
        reshape_for(key, value);
        at = lower_bound(key);
    }
    insert_at(at, key, value);
}

size_t ElementMap::erase(const ElementKey& key) {
    if (!fits_key(key)) return 0;
    const Position at = lower_bound(key);
    if (!holds(at, key)) return 0;
    erase_at(at);
    return 1;
}

bool ElementMap::operator==(const ElementMap& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin(), other.end());
}

ElementMap::Position ElementMap::insert_at(Position at, const ElementKey& key,
                                           const Verdict& value) {
    const uint32_t chain = value.chain.empty() ? 0 : chain_id(value.chain);
    const auto [chunk, offset] = std::visit(
        [&](auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            return insert_into(chunks, {at.chunk, at.offset}, Shape<R>::make(key, value, chain));
        },
        records_);
    ++size_;
    return Position{chunk, offset};
}

void ElementMap::erase_at(Position at) {
    std::visit(
        [&](auto& chunks) {
            using R = std::decay_t<decltype(chunks.front().front())>;
            release_chain(Shape<R>::chain(chunks[at.chunk][at.offset]));
            erase_from(chunks, {at.chunk, at.offset});
        },
        records_);
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
