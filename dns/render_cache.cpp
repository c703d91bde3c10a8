#include "dns/render_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace sb::dns {

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
    if (size_ >= kRenderCacheLimit || written.bytes.size() > 0xffff) return;
    if ((size_ + 1) * 2 > slots_.size()) grow();
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
}

void RenderCache::clear() {
    slots_.clear();
    blocks_.clear();
    size_ = 0;
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
    slots_.assign(std::max<size_t>(1024, old.size() * 2), Slot{});
    for (const Slot& slot : old) {
        if (slot.entry) place(slot);
    }
}

}  // namespace sb::dns
