// SharedArray: built from a vector or a list, read as a vector, shared by
// its copies, and written without changing a copy (copy on write); its
// elements are destroyed once, when the last copy goes.
#include "base/containers/shared_array.h"

#include <algorithm>
#include <catch.hpp>
#include <memory>
#include <span>
#include <thread>
#include <vector>

namespace sb {
namespace {

std::vector<int> items(const SharedArray<int>& array) {
    return {array.begin(), array.end()};
}

TEST_CASE("SharedArray reads as the vector it was made from") {
    SharedArray<int> empty;
    CHECK(empty.empty());
    CHECK(empty.size() == 0);
    CHECK(empty.begin() == empty.end());
    CHECK(SharedArray<int>(std::vector<int>{}).empty());

    SharedArray<int> array = {3, 1, 4};
    CHECK(array.size() == 3);
    CHECK(items(array) == std::vector<int>{3, 1, 4});
    CHECK(array[1] == 1);
    CHECK(array.front() == 3);
    CHECK(array.back() == 4);
    CHECK(array.at(2) == 4);
    CHECK_THROWS_AS(array.at(3), std::out_of_range);
    std::span<const int> span = array;
    CHECK(span.size() == 3);
    CHECK(span.data() == array.data());
}

TEST_CASE("SharedArray copies share one block until one is written") {
    const std::vector<int> source = {1, 2, 3};
    SharedArray<int> a = source;
    SharedArray<int> b = a;
    CHECK(a.shares(b));
    CHECK(a.data() == b.data());
    CHECK(a == b);
    CHECK(a == SharedArray<int>(source));  // equal elements, another block
    CHECK_FALSE(a.shares(SharedArray<int>(source)));
    CHECK_FALSE(SharedArray<int>().shares(SharedArray<int>()));

    b[0] = 10;  // copies the block first
    CHECK_FALSE(a.shares(b));
    CHECK(items(a) == std::vector<int>{1, 2, 3});
    CHECK(items(b) == std::vector<int>{10, 2, 3});
    const int* alone = b.data();
    b[1] = 20;  // b holds its block alone: written in place
    CHECK(b.data() == alone);

    SharedArray<int> c = a;
    c.push_back(4);
    c.erase(c.begin());
    c.pop_back();
    CHECK(items(c) == std::vector<int>{2, 3});
    CHECK(items(a) == std::vector<int>{1, 2, 3});
    c.clear();
    CHECK(c.empty());
    CHECK(c == SharedArray<int>());
    CHECK(items(a) == std::vector<int>{1, 2, 3});
}

TEST_CASE("SharedArray destroys its elements once, with its last copy") {
    auto counted = std::make_shared<int>(0);
    {
        SharedArray<std::shared_ptr<int>> a = {counted, counted};
        CHECK(counted.use_count() == 3);
        SharedArray<std::shared_ptr<int>> b = a;
        SharedArray<std::shared_ptr<int>> moved = std::move(b);
        CHECK(counted.use_count() == 3);  // copies share the elements
        a = SharedArray<std::shared_ptr<int>>();
        CHECK(counted.use_count() == 3);  // `moved` still holds them
    }
    CHECK(counted.use_count() == 1);
}

TEST_CASE("SharedArray copies may be dropped and written on several threads") {
    const SharedArray<int> shared = std::vector<int>(100, 7);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&shared, t] {
            for (int round = 0; round < 1000; ++round) {
                SharedArray<int> copy = shared;
                copy[static_cast<size_t>(round % 100)] = t;
            }
        });
    }
    for (auto& thread : threads) thread.join();
    CHECK(std::all_of(shared.begin(), shared.end(), [](int value) { return value == 7; }));
}

}  // namespace
}  // namespace sb
