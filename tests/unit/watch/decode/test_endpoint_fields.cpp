// The compact field types of watch::Endpoint (address list, rare string,
// target reference): they must behave as the vector, string and optional
// they replaced.
#include <catch.hpp>

#include "watch/objects.h"

namespace sb::watch {
namespace {

IpAddress v4(uint32_t n) {
    return IpAddress::v4(0x0a000000u + n);
}

TEST_CASE("AddressList keeps order and size across the move to the heap") {
    for (uint32_t count : {0u, 1u, 2u, 3u, 4u, 5u, 9u, 100u}) {
        AddressList list;
        for (uint32_t i = 0; i < count; ++i) list.push_back(v4(i));
        REQUIRE(list.size() == count);
        CHECK(list.empty() == (count == 0));
        uint32_t i = 0;
        for (const auto& address : list) CHECK(address == v4(i++));
        CHECK(i == count);
        if (count > 0) CHECK(list.front() == v4(0));
        if (count > 0) CHECK(list[count - 1] == v4(count - 1));
    }
}

TEST_CASE("AddressList copies are deep and compare by value") {
    AddressList three{v4(1), v4(2), v4(3)};
    AddressList copy = three;
    CHECK(copy == three);
    copy.push_back(v4(4));
    CHECK(three.size() == 3);
    CHECK_FALSE(copy == three);
    AddressList moved = std::move(copy);
    CHECK(moved.size() == 4);
    CHECK(moved[3] == v4(4));
    CHECK(AddressList{v4(1)} == AddressList{v4(1)});
    CHECK_FALSE(AddressList{v4(1)} == AddressList{v4(2)});
    CHECK_FALSE(AddressList{v4(1)} == AddressList{v4(1), v4(2)});
    CHECK(AddressList{} == AddressList{});
    three = AddressList{v4(7)};
    CHECK(three.size() == 1);
    CHECK(three.front() == v4(7));
}

TEST_CASE("RareString reads as the string it holds") {
    RareString none;
    CHECK(none.empty());
    CHECK(none.str().empty());
    CHECK(none == "");
    RareString host = std::string("web-0");
    CHECK_FALSE(host.empty());
    CHECK(host == "web-0");
    CHECK(host == std::string("web-0"));
    const std::string& text = host;
    CHECK(text == "web-0");
    std::string_view view = host;
    CHECK(view == "web-0");
    CHECK(std::string_view(none).empty());
    RareString copy = host;
    host = "web-1";
    CHECK(copy == "web-0");
    CHECK_FALSE(copy == host);
    CHECK(RareString("") == none);
    CHECK(RareString("").empty());
}

TEST_CASE("TargetRef holds an optional reference with value semantics") {
    TargetRef none;
    CHECK_FALSE(none.has_value());
    CHECK_FALSE(static_cast<bool>(none));
    TargetRef pod = ObjectReference{"Pod", "default", "web-7d4b9c-abcde"};
    REQUIRE(pod.has_value());
    CHECK(pod.kind() == "Pod");
    CHECK(pod.ns() == "default");
    CHECK(pod.name() == "web-7d4b9c-abcde");
    CHECK(*pod == ObjectReference{"Pod", "default", "web-7d4b9c-abcde"});
    TargetRef copy = pod;
    CHECK(copy == pod);
    copy = ObjectReference{"Pod", "default", "other"};
    CHECK(pod.name() == "web-7d4b9c-abcde");
    CHECK_FALSE(copy == pod);
    CHECK_FALSE(TargetRef(ObjectReference{"Pod", "kube-system", "web-7d4b9c-abcde"}) == pod);
    CHECK_FALSE(TargetRef(ObjectReference{"Node", "default", "web-7d4b9c-abcde"}) == pod);
    CHECK(TargetRef(*pod) == pod);
    CHECK_FALSE(none == pod);
    CHECK(none == TargetRef(std::nullopt));
    TargetRef unnamed = ObjectReference{"Pod", "", ""};
    REQUIRE(unnamed.has_value());
    CHECK(unnamed.name().empty());
    CHECK(unnamed.ns().empty());
    TargetRef moved = std::move(copy);
    CHECK(moved.name() == "other");
    copy = pod;
    CHECK(copy == pod);
    pod.reset();
    CHECK(pod == none);
    copy = none;
    CHECK_FALSE(copy.has_value());
}

TEST_CASE("Endpoints compare by every field through the compact types") {
    Endpoint a;
    a.addresses = {v4(1)};
    a.hostname = "web-0";
    a.target_ref = ObjectReference{"Pod", "default", "web-0"};
    Endpoint b = a;
    CHECK(a == b);
    b.hostname = "web-1";
    CHECK_FALSE(a == b);
    b = a;
    b.target_ref.reset();
    CHECK_FALSE(a == b);
    b = a;
    b.addresses.push_back(v4(2));
    CHECK_FALSE(a == b);
}

}  // namespace
}  // namespace sb::watch
