// FileWatch: a file's identity and content, and "has it changed since the
// last look", as the hosts and Corefile reloaders and the file source use it.
#include <catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/file_watch.h"

using namespace sb;

namespace {

std::string temp_path(const char* tag) {
    return "/tmp/sb-test-file-watch-" + std::to_string(::getpid()) + "-" + tag;
}

void write_file(const std::string& path, const std::string& text) {
    // Written beside and renamed over, as a ConfigMap update does: a new inode.
    std::string tmp = path + ".new";
    {
        std::ofstream file(tmp);
        file << text;
    }
    REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
}

}  // namespace

TEST_CASE("file watch: a look reads the file when its identity changed") {
    const std::string path = temp_path("look");
    write_file(path, "one\n");
    FileWatch watch;
    auto first = watch.look(path, 1024);
    REQUIRE(first.ok());
    CHECK(first->changed);
    CHECK(first->content == "one\n");
    CHECK(first->identity.size == 4);

    auto again = watch.look(path, 1024);
    REQUIRE(again.ok());
    CHECK_FALSE(again->changed);
    CHECK(again->content.empty());  // not read
    CHECK(again->identity == first->identity);

    write_file(path, "two\n");
    auto second = watch.look(path, 1024);
    REQUIRE(second.ok());
    CHECK(second->changed);
    CHECK(second->content == "two\n");

    watch.forget();
    auto forgotten = watch.look(path, 1024);
    REQUIRE(forgotten.ok());
    CHECK(forgotten->changed);
    std::remove(path.c_str());
}

TEST_CASE("file watch: an error forgets the last look") {
    const std::string path = temp_path("errors");
    write_file(path, "one\n");
    FileWatch watch;
    REQUIRE(watch.look(path, 1024).ok());

    std::remove(path.c_str());
    auto missing = watch.look(path, 1024);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message == "cannot open " + path);

    write_file(path, std::string(11, '#'));
    auto large = watch.look(path, 10);
    REQUIRE_FALSE(large.ok());
    CHECK(large.error().message == path + " is over 10 bytes");

    auto folder = watch.look("/tmp", 10);
    REQUIRE_FALSE(folder.ok());
    CHECK(folder.error().message == "/tmp is not a regular file");

    // Back: a change, even had it the identity of before the errors.
    auto back = watch.look(path, 1024);
    REQUIRE(back.ok());
    CHECK(back->changed);
    CHECK(back->content == std::string(11, '#'));
    std::remove(path.c_str());
}

TEST_CASE("file watch: content read elsewhere is a change when it differs") {
    FileWatch watch;
    CHECK(watch.changed("a"));  // the first content seen
    CHECK_FALSE(watch.changed("a"));
    CHECK(watch.changed("b"));
    CHECK(watch.changed("a"));
    watch.forget();
    CHECK(watch.changed("a"));
}
