// The elements of one nftables set or map: the key (ElementKey), the value
// (Verdict) and ElementMap, the ordered map from one to the other that the
// kept model holds for every set.
//
// ElementMap is what std::map<ElementKey, Verdict> was, in the subset of its
// interface the backend uses, with a fraction of the memory: the kept model
// holds 220k elements at 10k Services x 10 endpoints (docs/nftables.md,
// "Memory"). Elements are packed records in sorted chunks of at most kChunk
// records, so a lookup, an insertion or an erasure costs two binary
// searches and a move within one chunk; chain names are stored once per map
// and the records carry a 4-byte id. Iteration is in key order, as
// std::map's. A record holds only the fields its map's elements use, while
// every address is IPv4: 8 bytes while every element is an address pair
// with no value (the hairpin sets), 20 while every element is a backend
// map's (an address, protocol, port and slot to an address and port), 28
// for any other IPv4 element, 68 once an address is IPv6. The first element
// of an empty map picks the smallest shape that holds it; an element that
// does not fit moves every record to the 28-byte shape, or the 68-byte one
// for an IPv6 address, for good (until the map is empty again).
//
// Differences from std::map a caller must know: iterators yield the element
// by value (a std::pair built from the record; `it->second` works through a
// proxy), the elements cannot be modified in place (insert_or_assign), and
// every insertion or erasure invalidates all iterators.
// Not thread-safe; a plain value (copies are deep).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/ip.h"

namespace sb::rules::nftables {

enum class VerdictKind : uint8_t { kNone, kAccept, kDrop, kReturn, kJump, kGoto };

// An element's value: a verdict (verdict maps), or for the backend data
// maps (kind kNone) the DNAT target address and port. Sets carry none.
// Nothing orders Verdicts; only equality is used.
struct Verdict {
    Verdict(VerdictKind k = VerdictKind::kNone, std::string c = {}, IpAddress a = {},  // NOLINT
            uint16_t p = 0)
        : chain(std::move(c)), address(a), kind(k), port(p) {}
    std::string chain;  // for kJump / kGoto
    IpAddress address;  // backend maps
    VerdictKind kind = VerdictKind::kNone;
    uint16_t port = 0;  // backend maps
    bool operator==(const Verdict&) const = default;
};

struct ElementKey {
    IpAddress a;
    IpAddress b;
    uint8_t proto = 0;
    uint16_t port = 0;
    uint32_t slot = 0;  // backend maps: the endpoint's index (numgen value)
    auto operator<=>(const ElementKey&) const = default;
};

class ElementMap {
  public:
    using value_type = std::pair<ElementKey, Verdict>;
    class const_iterator;
    using iterator = const_iterator;

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void clear();

    const_iterator begin() const;
    const_iterator end() const;
    const_iterator find(const ElementKey& key) const;
    size_t count(const ElementKey& key) const;
    // The value of `key`; throws std::out_of_range when there is none.
    Verdict at(const ElementKey& key) const;

    // Inserts unless `key` is present; returns the element and whether it
    // was inserted (std::map::emplace).
    std::pair<const_iterator, bool> emplace(const ElementKey& key, const Verdict& value);
    void insert_or_assign(const ElementKey& key, const Verdict& value);
    // Returns how many elements were erased (0 or 1).
    size_t erase(const ElementKey& key);

    // The bytes one record takes in this map's current shape (8, 20, 28 or 68).
    size_t record_size() const;

    // Repacks the records into full chunks of exactly kChunk: insertions
    // in no particular order leave chunks about 60% used (splits, vector
    // growth); a map filled once and then changed a little at a time (the
    // full render) calls this when filled. Invalidates iterators.
    void compact();

    // Same elements with the same values (chain ids do not take part).
    bool operator==(const ElementMap& other) const;

    // Most records per chunk: a chunk move stays a few microseconds while
    // chunk headers stay a small share of the records.
    static constexpr size_t kChunk = 256;

    // The records of the four shapes (public for the implementation's
    // templates only). A pair: the key's two IPv4 addresses (host order);
    // every other field zero, the value none.
    struct PairRecord {
        uint32_t a = 0;
        uint32_t b = 0;
    };
    // A backend map's element: the key's IPv4 address, protocol, port and
    // slot, the value's IPv4 address and port; no second key address, no
    // verdict.
    struct BackendRecord {
        uint32_t a = 0;
        uint32_t slot = 0;
        uint32_t address = 0;
        uint16_t port = 0;
        uint16_t value_port = 0;
        uint8_t proto = 0;
    };
    // Any element: the key's and the value's fields, addresses as Address
    // (uint32_t, host order, while every address of the map is IPv4;
    // IpAddress otherwise).
    template <class Address>
    struct Record {
        Address a{};
        Address b{};
        Address address{};  // the value's
        uint32_t slot = 0;
        uint32_t chain = 0;  // an id of chains_; 0: none
        uint16_t port = 0;
        uint16_t value_port = 0;
        uint8_t proto = 0;
        VerdictKind kind = VerdictKind::kNone;
    };
    using NarrowRecord = Record<uint32_t>;
    using WideRecord = Record<IpAddress>;
    template <class R>
    using Chunks = std::vector<std::vector<R>>;

  private:
    // Where an element is or would go: chunk index and offset within it.
    struct Position {
        size_t chunk = 0;
        size_t offset = 0;
    };
    struct ChainName {
        std::string name;
        uint32_t refs = 0;
    };

    // Precondition of the three: `key` fits the current shape (fits_key).
    Position lower_bound(const ElementKey& key) const;
    bool holds(Position at, const ElementKey& key) const;
    value_type element(Position at) const;
    size_t chunk_count() const;
    size_t chunk_size(size_t chunk) const;
    // Whether a record of the current shape can hold `key` (and `value`).
    bool fits_key(const ElementKey& key) const;
    bool fits(const ElementKey& key, const Verdict& value) const;
    // Makes the shape one that holds (key, value) and every record: the
    // smallest for (key, value) when the map is empty, else 28-byte records,
    // or 68-byte ones for an IPv6 address.
    void reshape_for(const ElementKey& key, const Verdict& value);
    // Inserts at `at` (from lower_bound, key absent); returns where it went.
    Position insert_at(Position at, const ElementKey& key, const Verdict& value);
    void erase_at(Position at);
    uint32_t chain_id(const std::string& name);  // takes a reference
    void release_chain(uint32_t id);
    const std::string& chain_name(uint32_t id) const;

    // The shapes in the order a map moves through them.
    std::variant<Chunks<PairRecord>, Chunks<BackendRecord>, Chunks<NarrowRecord>,
                 Chunks<WideRecord>>
        records_;
    size_t size_ = 0;
    // Chain names by id - 1, with the number of records using each; ids of
    // names no record uses are reused (free_chain_ids_).
    std::vector<ChainName> chains_;
    std::vector<uint32_t> free_chain_ids_;
    std::map<std::string, uint32_t, std::less<>> chain_ids_;

    friend class const_iterator;
};

class ElementMap::const_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ElementMap::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;  // by value: records are not pairs
    struct pointer {
        value_type element;
        const value_type* operator->() const { return &element; }
    };

    const_iterator() = default;
    value_type operator*() const { return map_->element(at_); }
    pointer operator->() const { return pointer{**this}; }
    const_iterator& operator++() {
        if (++at_.offset == map_->chunk_size(at_.chunk)) at_ = Position{at_.chunk + 1, 0};
        return *this;
    }
    const_iterator operator++(int) {
        const_iterator before = *this;
        ++*this;
        return before;
    }
    bool operator==(const const_iterator& other) const {
        return at_.chunk == other.at_.chunk && at_.offset == other.at_.offset;
    }

  private:
    friend class ElementMap;
    const_iterator(const ElementMap* map, Position at) : map_(map), at_(at) {}
    const ElementMap* map_ = nullptr;
    Position at_;
};

}  // namespace sb::rules::nftables
