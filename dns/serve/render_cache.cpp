#include "dns/serve/render_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "base/containers/allocation_overhead.h"

namespace sb::dns {

namespace {

constexpr size_t kMinSlots = 1024;

}  // namespace

size_t RenderCache::entry_bytes(size_t key_size, size_t reply_size) {
    // The block, and its owner in blocks_ (twice: the vector's spare room).
    return sizeof(Entry) + key_size + reply_size + kAllocationOverhead +
           2 * sizeof(std::unique_ptr<char[]>);
}

size_t RenderCache::bytes() const {
    return entry_bytes_ + slots_.size() * sizeof(Slot);
}

size_t RenderCache::slots_after_insert() const {
    if ((size_ + 1) * 2 <= slots_.size()) return slots_.size();
    return std::max(kMinSlots, slots_.size() * 2);
}

const RenderCache::Entry* RenderCache::find(std::string_view key, uint64_t h) const {
    if (slots_.empty()) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& slot = slots_[i];
        if (!slot.entry) return nullptr;
        if (slot.hash == h && slot.entry->key_size == key.size() &&
            std::memcmp(slot.entry->key(), key.data(), key.size()) == 0) {
            return slot.entry;
        }
    }
}

void RenderCache::insert(std::string_view key, uint64_t h, const WriteResult& written) {
    if (written.bytes.size() > 0xffff || key.size() > 0xffff) return;
    size_t added = entry_bytes(key.size(), written.bytes.size());
    if (added + kMinSlots * sizeof(Slot) > limits_.bytes || limits_.entries == 0) return;
    if (size_ >= limits_.entries ||
        entry_bytes_ + added + slots_after_insert() * sizeof(Slot) > limits_.bytes) {
        clear();
        ++flushes_;
    }
    if (slots_after_insert() != slots_.size()) grow();
    auto block = std::make_unique<char[]>(sizeof(Entry) + key.size() + written.bytes.size());
    auto* entry = new (block.get()) Entry;
    entry->key_size = static_cast<uint16_t>(key.size());
    entry->reply_size = static_cast<uint16_t>(written.bytes.size());
    entry->shuffle_offset = static_cast<uint16_t>(written.shuffle_offset);
    entry->shuffle_size = static_cast<uint16_t>(written.shuffle_size);
    entry->shuffle_count = static_cast<uint16_t>(written.shuffle_count);
    std::memcpy(block.get() + sizeof(Entry), key.data(), key.size());
    std::memcpy(block.get() + sizeof(Entry) + key.size(), written.bytes.data(),
                written.bytes.size());
    place(Slot{h, entry});
    blocks_.push_back(std::move(block));
    ++size_;
    entry_bytes_ += added;
}

void RenderCache::clear() {
    // Memory given back, not only emptied: the bound is on what is held.
    std::vector<Slot>().swap(slots_);
    std::vector<std::unique_ptr<char[]>>().swap(blocks_);
    size_ = 0;
    entry_bytes_ = 0;
}

void RenderCache::reply_to(const Entry& entry, std::span<const uint8_t> query, size_t name_end,
                           std::string& out) {
    out.assign(entry.reply(), entry.reply_size);
    out[0] = static_cast<char>(query[0]);
    out[1] = static_cast<char>(query[1]);
    out[2] = static_cast<char>((out[2] & ~0x01) | (query[2] & 0x01));  // RD
    out[3] = static_cast<char>((out[3] & ~0x10) | (query[3] & 0x10));  // CD
    // The question as asked (same length: it differs in case only).
    std::memcpy(out.data() + kHeaderSize, query.data() + kHeaderSize, name_end - kHeaderSize);
}

void RenderCache::place(Slot slot) {
    size_t mask = slots_.size() - 1;
    size_t i = slot.hash & mask;
    while (slots_[i].entry) i = (i + 1) & mask;
    slots_[i] = slot;
}

void RenderCache::grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max(kMinSlots, old.size() * 2), Slot{});
    for (const Slot& slot : old) {
        if (slot.entry) place(slot);
    }
}

}  // namespace sb::dns
