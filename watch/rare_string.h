// RareString: a string that is usually empty (an endpoint's hostname, a
// Service's externalName and trafficDistribution): 8 B and no allocation
// while empty, against std::string's 32 B. Per-object names cannot be
// Symbols (interned for the life of the process), hence this. Reads as a
// const std::string& or a std::string_view. A value type; not thread-safe
// for writes.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace sb::watch {

class RareString {
  public:
    RareString() = default;
    RareString(std::string_view text)  // NOLINT: implicit, a string
        : text_(text.empty() ? nullptr : std::make_unique<const std::string>(text)) {}
    RareString(const std::string& text) : RareString(std::string_view(text)) {}  // NOLINT
    RareString(const char* text) : RareString(std::string_view(text)) {}         // NOLINT
    RareString(const RareString& other) : RareString(other.view()) {}
    RareString(RareString&&) noexcept = default;
    RareString& operator=(const RareString& other) {
        if (this != &other) *this = RareString(other.view());
        return *this;
    }
    RareString& operator=(RareString&&) noexcept = default;

    bool empty() const { return text_ == nullptr; }
    const std::string& str() const { return text_ ? *text_ : empty_string(); }
    operator const std::string&() const { return str(); }  // NOLINT: implicit
    operator std::string_view() const { return str(); }    // NOLINT: implicit
    std::string_view view() const { return str(); }

    friend bool operator==(const RareString& a, const RareString& b) {
        return a.view() == b.view();
    }
    friend bool operator==(const RareString& a, std::string_view b) { return a.view() == b; }
    friend bool operator==(const RareString& a, const std::string& b) { return a.view() == b; }
    friend bool operator==(const RareString& a, const char* b) { return a.view() == b; }

  private:
    static const std::string& empty_string() {
        static const std::string empty;
        return empty;
    }

    std::unique_ptr<const std::string> text_;
};

}  // namespace sb::watch
