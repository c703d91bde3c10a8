#include "base/symbol.h"

#include <mutex>
#include <unordered_set>

namespace sb {

namespace {

struct SymbolTable {
    SymbolTable() : empty(&*values.emplace().first) {}
    std::mutex mutex;
    // Node-based: element addresses are stable for the life of the process.
    std::unordered_set<std::string> values;
    const std::string* const empty;
};

SymbolTable& table() {
    // Leaked on purpose: Symbols may be read during static destruction.
    static auto* instance = new SymbolTable;
    return *instance;
}

const std::string* empty_value() {
    return table().empty;
}

}  // namespace

Symbol::Symbol() : value_(empty_value()) {}

Symbol::Symbol(std::string_view text) {
    if (text.empty()) {
        value_ = empty_value();
        return;
    }
    auto& symbols = table();
    std::lock_guard lock(symbols.mutex);
    value_ = &*symbols.values.emplace(text).first;
}

}  // namespace sb
