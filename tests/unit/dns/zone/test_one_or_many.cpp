#include "dns/zone/one_or_many.h"

#include <catch.hpp>
#include <string>
#include <vector>

namespace sb::dns {
namespace {

std::vector<std::string> items(const OneOrMany<std::string>& list) {
    return {list.begin(), list.end()};
}

TEST_CASE("OneOrMany: inserts and erases keep the order through in-place and heap storage") {
    OneOrMany<std::string> list;
    REQUIRE(list.empty());
    REQUIRE(list.size() == 0);
    REQUIRE(list.begin() == list.end());

    list.insert(0, "m");
    REQUIRE(items(list) == std::vector<std::string>{"m"});
    list.insert(0, "a");  // one in place becomes two on the heap
    list.insert(2, "z");
    list.insert(1, "f");
    REQUIRE(items(list) == std::vector<std::string>{"a", "f", "m", "z"});
    REQUIRE(list.front() == "a");
    REQUIRE(list[3] == "z");

    list.erase(1);
    REQUIRE(items(list) == std::vector<std::string>{"a", "m", "z"});
    list.erase(2);
    list.erase(0);  // two on the heap become one in place
    REQUIRE(items(list) == std::vector<std::string>{"m"});
    REQUIRE(list.size() == 1);
    list.erase(0);
    REQUIRE(list.empty());
}

TEST_CASE("OneOrMany: built from a vector of zero, one or several elements") {
    REQUIRE(OneOrMany<std::string>(std::vector<std::string>{}).empty());
    REQUIRE(items(OneOrMany<std::string>(std::vector<std::string>{"x"})) ==
            std::vector<std::string>{"x"});
    OneOrMany<std::string> many(std::vector<std::string>{"x", "y", "z"});
    REQUIRE(items(many) == std::vector<std::string>{"x", "y", "z"});
    many[1].push_back('!');  // writable in place
    REQUIRE(items(many) == std::vector<std::string>{"x", "y!", "z"});
}

TEST_CASE("OneOrMany: copies are independent values") {
    OneOrMany<std::string> one(std::vector<std::string>{"a", "b"});
    OneOrMany<std::string> copy = one;
    copy.insert(2, "c");
    copy.erase(0);
    REQUIRE(items(one) == std::vector<std::string>{"a", "b"});
    REQUIRE(items(copy) == std::vector<std::string>{"b", "c"});
}

}  // namespace
}  // namespace sb::dns
