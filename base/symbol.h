// Symbol: an interned, immutable string.
//
// Node names, zones, namespaces and object kinds repeat across hundreds of
// thousands of endpoints; storing each distinct value once keeps a large
// cluster's Store small (8 bytes per field instead of a 32-byte string).
// Thread safety: interning takes a global lock; reading a Symbol is
// lock-free. Interned values live for the life of the process, so only
// cluster-bounded vocabularies (never per-object names) should be Symbols.
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace sb {

class Symbol {
  public:
    Symbol();                       // the empty string
    Symbol(std::string_view text);  // NOLINT: implicit, interns
    Symbol(const std::string& text) : Symbol(std::string_view(text)) {}  // NOLINT: implicit
    Symbol(const char* text) : Symbol(std::string_view(text)) {}         // NOLINT: implicit

    const std::string& str() const { return *value_; }
    operator const std::string&() const { return *value_; }  // NOLINT: implicit
    std::string_view view() const { return *value_; }
    bool empty() const { return value_->empty(); }
    size_t size() const { return value_->size(); }

    // Interned: equal text means the same pointer.
    bool operator==(const Symbol& other) const { return value_ == other.value_; }
    std::strong_ordering operator<=>(const Symbol& other) const {
        return value_ == other.value_ ? std::strong_ordering::equal : *value_ <=> *other.value_;
    }
    friend bool operator==(const Symbol& symbol, std::string_view text) {
        return symbol.view() == text;
    }
    friend bool operator==(const Symbol& symbol, const std::string& text) {
        return symbol.view() == text;
    }
    friend bool operator==(const Symbol& symbol, const char* text) { return symbol.view() == text; }

  private:
    const std::string* value_;
};

}  // namespace sb
