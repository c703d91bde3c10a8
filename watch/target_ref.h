// ObjectReference (an endpoint's targetRef as a value) and TargetRef, the
// form an Endpoint keeps it in.
//
// Every Pod endpoint of a real cluster has a targetRef (kind Pod, its
// namespace, the Pod's name). Kept as an ObjectReference in a block of its
// own plus the name's buffer, that was two allocations and about 110 B of
// heap per endpoint (docs/store.md, "Memory, round mem"). TargetRef keeps
// the interned kind and namespace and the name's characters in one block,
// and costs one pointer when absent.
// A value type: copies are deep, == compares the values. Not thread-safe
// for writes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/symbol.h"

namespace sb::watch {

struct ObjectReference {
    Symbol kind;
    Symbol ns;
    std::string name;
    bool operator==(const ObjectReference&) const = default;
};

class TargetRef {
  public:
    TargetRef() = default;
    TargetRef(std::nullopt_t) {}  // NOLINT: as optional's
    TargetRef(const ObjectReference& ref) : TargetRef(ref.kind, ref.ns, ref.name) {}  // NOLINT
    TargetRef(Symbol kind, Symbol ns, std::string_view name);
    TargetRef(const TargetRef& other);
    TargetRef(TargetRef&&) noexcept = default;
    TargetRef& operator=(const TargetRef& other);
    TargetRef& operator=(TargetRef&&) noexcept = default;

    bool has_value() const { return block_ != nullptr; }
    explicit operator bool() const { return has_value(); }
    void reset() { block_.reset(); }

    // Preconditions: has_value().
    Symbol kind() const { return header().kind; }
    Symbol ns() const { return header().ns; }
    std::string_view name() const;
    ObjectReference operator*() const { return {kind(), ns(), std::string(name())}; }

    friend bool operator==(const TargetRef& a, const TargetRef& b);

  private:
    // The block: a Header, then the name's characters (no terminator).
    struct Header {
        Symbol kind;
        Symbol ns;
        uint32_t name_size = 0;
    };
    const Header& header() const;

    std::unique_ptr<unsigned char[]> block_;
};

}  // namespace sb::watch
