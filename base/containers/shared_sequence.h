// SharedSequence<T>: a sequence of shared, immutable values that copies of
// it share by the chunk and by the page of chunks. The entries (one
// std::shared_ptr<const T> each) sit in chunks of at most kChunk, and the
// chunk pointers in pages of at most kPage; a copy of the sequence copies one
// pointer per page, and append_shared() takes whole pages (or, at the edges
// of a range, whole chunks) of another sequence without touching what they
// hold. So a sequence derived from another by replacing a few values costs
// O(changed + kChunk + kPage + size / (kChunk * kPage)) pointer copies, not
// one atomic reference count per entry or per chunk. Each such copy is a
// cache miss in the daemon, where a change comes alone: one pointer per
// chunk cost a partial replan 0.48 ms at 50k Services and 0.81 ms at 100k
// with the caches cold (tests/bench/bench-daemon; docs/planner.md).
//
// Reading behaves as a std::vector<T> of the values: random-access
// iterators, operator[], front()/back(). Writing through operator[],
// front() or back() of a non-const object first detaches the page, the
// chunk and the entry it writes when another sequence shares them (copy on
// write), so a sequence never changes under another. A reference so
// obtained stays valid until the next call that adds, removes or reorders
// entries; a pointer to a value stays valid as long as some sequence holds
// its entry.
//
// Thread safety: not thread-safe for writes; const access from any thread,
// as long as nobody writes that sequence. Copies may be written by other
// threads: a shared page, chunk or entry is copied before a write, never
// changed.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/containers/copy_on_write.h"

namespace sb {

template <typename T, size_t kChunk = 64, size_t kPage = 64>
class SharedSequence {
    static_assert(kChunk >= 2 && kPage >= 2);
    struct Chunk {
        std::vector<std::shared_ptr<const T>> entries;
    };
    struct Page {
        std::vector<std::shared_ptr<Chunk>> chunks;
        std::vector<size_t> starts;  // each chunk's first entry, from the page's first
        size_t size = 0;             // entries in the page's chunks
    };

  public:
    using Entry = std::shared_ptr<const T>;
    using value_type = T;

    class const_iterator {
      public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = const T*;
        using reference = const T&;

        const_iterator() = default;
        reference operator*() const { return *entry(); }
        pointer operator->() const { return entry().get(); }
        reference operator[](difference_type n) const { return *(*this + n); }
        // The shared entry the iterator is at.
        const Entry& entry() const {
            if (index_ < first_ || index_ >= last_) {
                chunk_ = &owner_->chunk_holding(index_, first_);
                last_ = first_ + chunk_->entries.size();
            }
            return chunk_->entries[index_ - first_];
        }

        const_iterator& operator++() {
            ++index_;
            return *this;
        }
        const_iterator operator++(int) {
            const_iterator before = *this;
            ++index_;
            return before;
        }
        const_iterator& operator--() {
            --index_;
            return *this;
        }
        const_iterator operator--(int) {
            const_iterator before = *this;
            --index_;
            return before;
        }
        const_iterator& operator+=(difference_type n) {
            index_ = static_cast<size_t>(static_cast<difference_type>(index_) + n);
            return *this;
        }
        const_iterator& operator-=(difference_type n) { return *this += -n; }
        friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
        friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
        friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
        friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
            return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
        }
        friend bool operator==(const const_iterator& a, const const_iterator& b) {
            return a.index_ == b.index_;
        }
        friend std::strong_ordering operator<=>(const const_iterator& a, const const_iterator& b) {
            return a.index_ <=> b.index_;
        }

      private:
        friend class SharedSequence;
        const_iterator(const SharedSequence* owner, size_t index) : owner_(owner), index_(index) {}

        const SharedSequence* owner_ = nullptr;
        size_t index_ = 0;
        // The chunk last looked up, so that a walk finds each chunk once.
        mutable const Chunk* chunk_ = nullptr;
        mutable size_t first_ = 0;
        mutable size_t last_ = 0;
    };
    using iterator = const_iterator;

    SharedSequence() = default;
    SharedSequence(std::vector<T> values) {  // NOLINT: a vector converts
        for (auto& value : values) push_back(std::move(value));
    }
    SharedSequence(std::initializer_list<T> values) : SharedSequence(std::vector<T>(values)) {}

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const_iterator begin() const { return const_iterator(this, 0); }
    const_iterator end() const { return const_iterator(this, size_); }
    const T& operator[](size_t i) const { return *entry(i); }
    const T& at(size_t i) const {
        if (i >= size_) throw std::out_of_range("SharedSequence::at");
        return *entry(i);
    }
    const T& front() const { return *entry(0); }
    const T& back() const { return *entry(size_ - 1); }
    T& operator[](size_t i) { return detach(i); }
    T& front() { return detach(0); }
    T& back() { return detach(size_ - 1); }
    // The shared entry itself, for a sequence built from another one.
    const Entry& entry(size_t i) const {
        size_t first = 0;
        const Chunk& chunk = chunk_holding(i, first);
        return chunk.entries[i - first];
    }

    void reserve(size_t n) {
        const size_t pages = n / (kChunk * kPage) + 1;
        pages_.reserve(pages);
        page_starts_.reserve(pages);
    }
    void clear() {
        pages_.clear();
        page_starts_.clear();
        size_ = 0;
    }
    void push_back(T value) { push_entry(std::make_shared<T>(std::move(value))); }
    // Precondition: `entry` is not null and comes from entry() of a
    // SharedSequence (whose entries are writable objects, see detach()).
    void push_back(Entry entry) { push_entry(std::move(entry)); }
    // Appends the entries [first, last) of another sequence, shared: whole
    // pages are taken as they are, then whole chunks at the edges of the
    // range; a short page or chunk is copied piece by piece (so pages and
    // chunks stay at least half full away from the edges of a change).
    void append_shared(const_iterator first, const_iterator last) {
        const SharedSequence& from = *first.owner_;
        size_t i = first.index_;
        while (i < last.index_) {
            const size_t p = from.page_of(i);
            const Page& page = *from.pages_[p];
            const size_t page_first = from.page_starts_[p];
            if (i == page_first && page_first + page.size <= last.index_ &&
                page.chunks.size() >= kPage / 2) {
                push_page(from.pages_[p]);
                i = page_first + page.size;
                continue;
            }
            const size_t c = chunk_of(page, i - page_first);
            const auto& chunk = page.chunks[c];
            const size_t chunk_first = page_first + page.starts[c];
            const size_t chunk_last = chunk_first + chunk->entries.size();
            if (i == chunk_first && chunk_last <= last.index_ &&
                chunk->entries.size() >= kChunk / 2) {
                push_chunk(chunk);
                i = chunk_last;
                continue;
            }
            for (const size_t stop = std::min(chunk_last, last.index_); i < stop; ++i) {
                push_entry(chunk->entries[i - chunk_first]);
            }
        }
    }
    void pop_back() {
        Page& page = own(pages_.back());
        Chunk& chunk = own(page.chunks.back());
        chunk.entries.pop_back();
        --page.size;
        --size_;
        if (chunk.entries.empty()) {
            page.chunks.pop_back();
            page.starts.pop_back();
        }
        if (page.chunks.empty()) {
            pages_.pop_back();
            page_starts_.pop_back();
        }
    }
    const_iterator erase(const_iterator position) {
        const size_t index = position.index_;
        std::vector<Entry> entries = flattened();
        entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(index));
        rebuild(std::move(entries));
        return const_iterator(this, index);
    }
    // Orders the entries by `less` over their values.
    template <typename Less>
    void sort(Less less) {
        std::vector<Entry> entries = flattened();
        std::sort(entries.begin(), entries.end(),
                  [&](const Entry& a, const Entry& b) { return less(*a, *b); });
        rebuild(std::move(entries));
    }

    // By value; an entry shared by both sides is equal without a look.
    bool operator==(const SharedSequence& other) const {
        if (size_ != other.size_) return false;
        for (auto a = begin(), b = other.begin(); a != end(); ++a, ++b) {
            if (a.entry() != b.entry() && !(*a.entry() == *b.entry())) return false;
        }
        return true;
    }

  private:
    // The page holding index i (< size_): the last one starting at or before it.
    size_t page_of(size_t i) const {
        auto after = std::upper_bound(page_starts_.begin(), page_starts_.end(), i);
        return static_cast<size_t>(after - page_starts_.begin()) - 1;
    }
    // The chunk of `page` holding its entry `offset` (< page.size).
    static size_t chunk_of(const Page& page, size_t offset) {
        auto after = std::upper_bound(page.starts.begin(), page.starts.end(), offset);
        return static_cast<size_t>(after - page.starts.begin()) - 1;
    }
    // The chunk holding index i (< size_), and in `first` its first index.
    const Chunk& chunk_holding(size_t i, size_t& first) const {
        const size_t p = page_of(i);
        const Page& page = *pages_[p];
        const size_t c = chunk_of(page, i - page_starts_[p]);
        first = page_starts_[p] + page.starts[c];
        return *page.chunks[c];
    }
    void push_page(std::shared_ptr<Page> page) {
        page_starts_.push_back(size_);
        size_ += page->size;
        pages_.push_back(std::move(page));
    }
    // Appends `chunk` to the last page, copied first when shared (a copy of
    // at most kPage pointers), or to a new page when the last one is full.
    void push_chunk(std::shared_ptr<Chunk> chunk) {
        if (pages_.empty() || pages_.back()->chunks.size() >= kPage) {
            page_starts_.push_back(size_);
            pages_.push_back(std::make_shared<Page>());
            pages_.back()->chunks.reserve(kPage);
            pages_.back()->starts.reserve(kPage);
        }
        Page& page = own(pages_.back());
        const size_t count = chunk->entries.size();
        page.starts.push_back(page.size);
        page.chunks.push_back(std::move(chunk));
        page.size += count;
        size_ += count;
    }
    void push_entry(Entry entry) {
        if (pages_.empty() || pages_.back()->chunks.back()->entries.size() >= kChunk) {
            auto chunk = std::make_shared<Chunk>();
            chunk->entries.reserve(kChunk);
            push_chunk(std::move(chunk));
        }
        Page& page = own(pages_.back());
        own(page.chunks.back()).entries.push_back(std::move(entry));
        ++page.size;
        ++size_;
    }
    T& detach(size_t i) {
        // The page and the chunk first: once this sequence holds them alone,
        // an entry another sequence holds has a second owner (that one's chunk).
        const size_t p = page_of(i);
        Page& page = own(pages_[p]);
        const size_t c = chunk_of(page, i - page_starts_[p]);
        Entry& entry = own(page.chunks[c]).entries[i - page_starts_[p] - page.starts[c]];
        // Entries are made non-const (push_back above), so an entry no other
        // chunk holds may be written in place; a shared one is copied first.
        if (!sole_holder(entry)) entry = std::make_shared<T>(*entry);
        return const_cast<T&>(*entry);
    }
    std::vector<Entry> flattened() const {
        std::vector<Entry> entries;
        entries.reserve(size_);
        for (const auto& page : pages_) {
            for (const auto& chunk : page->chunks) {
                entries.insert(entries.end(), chunk->entries.begin(), chunk->entries.end());
            }
        }
        return entries;
    }
    void rebuild(std::vector<Entry> entries) {
        clear();
        for (auto& entry : entries) push_entry(std::move(entry));
    }

    // Shared between copies; a page or chunk is written only while this
    // sequence is its only holder (base/containers/copy_on_write.h).
    std::vector<std::shared_ptr<Page>> pages_;
    std::vector<size_t> page_starts_;  // the index of each page's first entry
    size_t size_ = 0;
};

}  // namespace sb
