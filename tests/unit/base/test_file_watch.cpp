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

// A file under /tmp that the test replaces whole, as kubelet replaces a
// ConfigMap's file (a new inode each time), and removes when done.
class ScratchFile {
  public:
    explicit ScratchFile(const char* tag)
        : path_("/tmp/sb-test-file-watch-" + std::to_string(::getpid()) + "-" + tag) {}
    ~ScratchFile() { std::remove(path_.c_str()); }

    const std::string& path() const { return path_; }
    void replace(const std::string& text) const {
        const std::string next = path_ + ".next";
        std::ofstream(next) << text;
        REQUIRE(std::rename(next.c_str(), path_.c_str()) == 0);
    }
    void remove() const { std::remove(path_.c_str()); }

  private:
    const std::string path_;
};

}  // namespace

TEST_CASE("file watch: a look reads the file when its identity changed") {
    ScratchFile file("look");
    const std::string& path = file.path();
    file.replace("one\n");
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

    file.replace("two\n");
    auto second = watch.look(path, 1024);
    REQUIRE(second.ok());
    CHECK(second->changed);
    CHECK(second->content == "two\n");

    watch.forget();
    auto forgotten = watch.look(path, 1024);
    REQUIRE(forgotten.ok());
    CHECK(forgotten->changed);
}

TEST_CASE("file watch: an error forgets the last look") {
    ScratchFile file("errors");
    const std::string& path = file.path();
    file.replace("one\n");
    FileWatch watch;
    REQUIRE(watch.look(path, 1024).ok());

    file.remove();
    auto missing = watch.look(path, 1024);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message == "cannot open " + path);

    file.replace(std::string(11, '#'));
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
