#include "watch/target_ref.h"

#include <cstring>
#include <new>
#include <type_traits>

namespace sb::watch {

// operator new[] returns storage aligned for any fundamental type, so the
// Header (pointers and an integer) can start the block. Header is trivially
// destructible: freeing the bytes ends it.
static_assert(std::is_trivially_destructible_v<Symbol>);

TargetRef::TargetRef(Symbol kind, Symbol ns, std::string_view name)
    : block_(new unsigned char[sizeof(Header) + name.size()]) {
    new (block_.get()) Header{kind, ns, static_cast<uint32_t>(name.size())};
    if (!name.empty()) std::memcpy(block_.get() + sizeof(Header), name.data(), name.size());
}

TargetRef::TargetRef(const TargetRef& other) {
    if (other) *this = TargetRef(other.kind(), other.ns(), other.name());
}

TargetRef& TargetRef::operator=(const TargetRef& other) {
    if (this != &other)
        *this = other ? TargetRef(other.kind(), other.ns(), other.name()) : TargetRef();
    return *this;
}

const TargetRef::Header& TargetRef::header() const {
    return *std::launder(reinterpret_cast<const Header*>(block_.get()));
}

std::string_view TargetRef::name() const {
    return {reinterpret_cast<const char*>(block_.get()) + sizeof(Header), header().name_size};
}

bool operator==(const TargetRef& a, const TargetRef& b) {
    if (a.has_value() != b.has_value()) return false;
    return !a || (a.kind() == b.kind() && a.ns() == b.ns() && a.name() == b.name());
}

}  // namespace sb::watch
