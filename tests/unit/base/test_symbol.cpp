#include <catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "base/symbol.h"

using sb::Symbol;

TEST_CASE("symbols with equal text are the same value, and compare with strings") {
    Symbol a("node-a");
    Symbol b(std::string("node-") + "a");
    CHECK(a == b);
    CHECK(&a.str() == &b.str());
    CHECK(a == "node-a");
    CHECK(a == std::string("node-a"));
    CHECK_FALSE(a == "node-b");
    CHECK(Symbol() == Symbol(""));
    CHECK(Symbol().empty());
    CHECK(Symbol("b") > Symbol("a"));
    const std::string& text = a;
    CHECK(text == "node-a");
}

TEST_CASE("interning from many threads gives one value per text") {
    std::vector<const std::string*> seen(8);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < seen.size(); ++i) {
        threads.emplace_back([&seen, i] {
            for (int n = 0; n < 1000; ++n) Symbol(std::to_string(n));
            seen[i] = &Symbol("zone-threads").str();
        });
    }
    for (auto& thread : threads) thread.join();
    for (const auto* value : seen) CHECK(value == seen[0]);
}
