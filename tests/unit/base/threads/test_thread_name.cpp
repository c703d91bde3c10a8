// name_this_thread: the name the kernel shows for the calling thread, cut to
// the 15 bytes the kernel keeps; other threads keep theirs. start_named_thread:
// the body runs under its name, which the thread holds a copy of.
#include <catch.hpp>

#include <pthread.h>

#include <array>
#include <future>
#include <string>
#include <thread>

#include "base/threads/thread_name.h"

using namespace sb;

namespace {

// The calling thread's name as the kernel has it.
std::string own_name() {
    std::array<char, 64> buffer{};
    REQUIRE(::pthread_getname_np(::pthread_self(), buffer.data(), buffer.size()) == 0);
    return buffer.data();
}

// The name a new thread has after name_this_thread(name).
std::string named(std::string name) {
    std::string seen;
    std::thread([&] {
        name_this_thread(name);
        seen = own_name();
    }).join();
    return seen;
}

}  // namespace

TEST_CASE("name_this_thread names the calling thread") {
    CHECK(named("sb-sync") == "sb-sync");
    CHECK(named("sb-dns-fwd-tcp") == "sb-dns-fwd-tcp");
}

TEST_CASE("name_this_thread cuts a name to the 15 bytes the kernel keeps") {
    CHECK(named("sb-dns-forwarder-tcp") == "sb-dns-forwarde");
    CHECK(named("0123456789abcdef") == "0123456789abcde");
}

TEST_CASE("name_this_thread leaves other threads' names alone") {
    const std::string before = own_name();
    CHECK(named("sb-other") == "sb-other");
    CHECK(own_name() == before);
}

TEST_CASE("start_named_thread runs the body under the name, copied before the caller's goes") {
    std::promise<void> go;
    std::string seen;
    std::thread thread;
    {
        std::string name = "sb-dns-state";
        thread = start_named_thread(name, [&seen, wait = go.get_future()]() mutable {
            wait.wait();  // until the caller's string is gone
            seen = own_name();
        });
        name.assign("overwritten-and-gone");
    }
    go.set_value();
    thread.join();
    CHECK(seen == "sb-dns-state");
}
