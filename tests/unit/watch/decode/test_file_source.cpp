// FileSource: initial load, inotify-driven updates, broken and deleted files,
// what a change re-reads, and which of two files defining an object wins.
// Conditions are polled (up to 5 s), never timed.
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "tests/unit/watch/decode/fixtures.h"
#include "watch/file_source.h"

using namespace sb::watch;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

// A temporary folder removed with everything in it.
class TempDir {
  public:
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "sb-file-source-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    std::string path() const { return path_.string(); }

  private:
    fs::path path_;
};

// Writes like an editor does: a temporary file renamed over the target.
void write_atomically(const std::string& path, const std::string& content) {
    const std::string temp = path + ".tmp~";
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out << content;
    }
    fs::rename(temp, path);
}

void write_in_place(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
}

bool eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 250; ++i) {
        if (condition()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return condition();
}

std::string service_named(const std::string& name, const char* port = "80") {
    return fixtures::to_json(fixtures::edited(
        fixtures::kService,
        {{"/metadata/name", ('"' + name + '"').c_str()}, {"/spec/ports/0/port", port}}));
}

std::string list_of(const std::vector<std::string>& items) {
    std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]}";
}

bool has_service(Store& store, const std::string& name) {
    return store.snapshot()->find_service(ObjectKey{"default", name}) != nullptr;
}

uint16_t first_port(Store& store, const std::string& name) {
    auto snapshot = store.snapshot();
    const Service* service = snapshot->find_service(ObjectKey{"default", name});
    return service ? service->ports[0].port : 0;
}

std::string metrics(const FileSource& source) {
    sb::metrics::TextWriter out;
    source.append_metrics(out);
    return out.text();
}

// The value of an unlabelled counter of `source`.
uint64_t counter(const FileSource& source, const std::string& name) {
    const std::string text = metrics(source);
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) throw std::runtime_error(name + " is not exported");
    return std::stoull(text.substr(at + name.size() + 2));
}

uint64_t files_read(const FileSource& source) {
    return counter(source, "switchboard_source_files_read_total");
}

uint64_t file_errors(const FileSource& source) {
    return counter(source, "switchboard_source_file_errors_total");
}

// A folder of one file per Service, and b.json's second name outside it: a
// write through that name changes b.json without an event on the folder, so
// only a pass that reads b.json sees it.
struct FolderWithHiddenWriter {
    explicit FolderWithHiddenWriter(std::initializer_list<std::string> services) {
        fs::create_directory(folder);
        for (const auto& name : services)
            write_in_place(in_folder(name + ".json"), service_named(name));
        fs::create_hard_link(in_folder("b.json"), dir.file("b.json"));
    }
    std::string in_folder(const std::string& name) const { return folder + "/" + name; }
    void write_b_unseen(const std::string& content) const {
        write_in_place(dir.file("b.json"), content);
    }

    TempDir dir;
    const std::string folder = dir.file("folder");
};

TouchedNames touched(std::initializer_list<std::string> names) {
    TouchedNames out;
    out.names.insert(names.begin(), names.end());
    return out;
}

// One inotify_event record as read(2) returns it (the name NUL-padded).
std::string event_record(int wd, uint32_t mask, const std::string& name = "") {
    const size_t len = name.empty() ? 0 : (name.size() + 16) / 16 * 16;
    inotify_event event{};
    event.wd = wd;
    event.mask = mask;
    event.len = static_cast<uint32_t>(len);
    std::string record(sizeof event + len, '\0');
    std::memcpy(record.data(), &event, sizeof event);
    std::memcpy(record.data() + sizeof event, name.data(), name.size());
    return record;
}

}  // namespace

TEST_CASE("a folder is loaded as the union of its json files") {
    TempDir dir;
    write_in_place(dir.file("services.json"), list_of({service_named("a"), service_named("b")}));
    write_in_place(dir.file("slices.json"), fixtures::kSlice);
    write_in_place(dir.file("notes.txt"), "not json, not read");
    write_in_place(dir.file(".hidden.json"), "not read either");
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    auto snapshot = store.snapshot();
    CHECK(snapshot->synced());
    CHECK(snapshot->service_count() == 2);
    CHECK(snapshot->endpoint_slices().size() == 1);
    CHECK_THAT(metrics(source), Contains("switchboard_source_reloads_total 1\n"));
}

TEST_CASE("bad objects in a good file are skipped and counted") {
    TempDir dir;
    const std::string bad = service_named("bad", "0");
    write_in_place(dir.file("all.json"), list_of({service_named("good"), bad, fixtures::kNode}));
    Store store;
    FileSource source(dir.file("all.json"), store);
    REQUIRE(source.load().ok());
    CHECK(has_service(store, "good"));
    CHECK_FALSE(has_service(store, "bad"));
    CHECK(store.snapshot()->nodes().size() == 1);
    const std::string text = metrics(source);
    CHECK_THAT(text, Contains("# TYPE switchboard_source_objects_rejected_total counter\n"));
    CHECK_THAT(text, Contains("switchboard_source_objects_rejected_total{kind=\"Service\"} 1\n"));
    CHECK_THAT(text, Contains("switchboard_source_objects_rejected_total{kind=\"Node\"} 0\n"));
    CHECK_THAT(text, Contains("switchboard_source_file_errors_total 0\n"));
}

TEST_CASE("Pods in a List and in a PodList are read, a bad one skipped and counted") {
    TempDir dir;
    const std::string bad =
        fixtures::to_json(fixtures::edited(fixtures::kPod, {{"/metadata/name", R"("bad")"},
                                                            {"/status/podIP", R"("10.244.1.300")"},
                                                            {"/status/podIPs", nullptr}}));
    write_in_place(dir.file("cluster.json"), list_of({service_named("web"), fixtures::kPod, bad}));
    const std::string other = fixtures::to_json(
        fixtures::edited(fixtures::kPod, {{"/metadata/name", R"("db-0")"}, {"/kind", nullptr}}));
    write_in_place(dir.file("pods.json"),
                   R"({"apiVersion":"v1","kind":"PodList","items":[)" + other + "]}");
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    auto snapshot = store.snapshot();
    CHECK(snapshot->service_count() == 1);
    REQUIRE(snapshot->pods().size() == 2);
    const auto* pod = snapshot->pods().find(ObjectKey{"shop", "web-7d4b9c-abcde"});
    REQUIRE(pod);
    CHECK((*pod)->pod_ips.size() == 2);
    CHECK(snapshot->pods().find(ObjectKey{"shop", "db-0"}));
    CHECK_FALSE(snapshot->pods().find(ObjectKey{"shop", "bad"}));
    CHECK_THAT(metrics(source),
               Contains("switchboard_source_objects_rejected_total{kind=\"Pod\"} 1\n"));
}

TEST_CASE("an unreadable path is an error naming it") {
    TempDir dir;
    Store store;
    FileSource missing(dir.file("nope.json"), store);
    auto status = missing.load();
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.error().describe(), Contains(dir.file("nope.json")));
    CHECK_FALSE(store.snapshot()->synced());
    CHECK_FALSE(missing.start().ok());

    write_in_place(dir.file("broken.json"), R"({"kind":"List","items":[)");
    FileSource broken(dir.path(), store);
    auto parse = broken.load();
    REQUIRE_FALSE(parse.ok());
    CHECK_THAT(parse.error().describe(), Contains(dir.file("broken.json")));
    CHECK_THAT(parse.error().describe(), Contains("invalid JSON"));
    CHECK_THAT(metrics(broken), Contains("switchboard_source_file_errors_total 1\n"));
}

TEST_CASE("a change to a watched folder reaches the store") {
    TempDir dir;
    write_in_place(dir.file("a.json"), list_of({service_named("a")}));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    REQUIRE(source.start().ok());

    write_atomically(dir.file("a.json"), list_of({service_named("a", "8080")}));
    CHECK(eventually([&] { return first_port(store, "a") == 8080; }));

    write_in_place(dir.file("b.json"), service_named("b"));
    CHECK(eventually([&] { return has_service(store, "b"); }));

    fs::remove(dir.file("b.json"));
    CHECK(eventually([&] { return !has_service(store, "b"); }));
    CHECK(has_service(store, "a"));
    source.stop();
    source.stop();  // idempotent
}

TEST_CASE("a broken file keeps its last good objects while others update") {
    TempDir dir;
    write_in_place(dir.file("a.json"), list_of({service_named("a")}));
    write_in_place(dir.file("b.json"), list_of({service_named("b")}));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    REQUIRE(source.start().ok());

    write_atomically(dir.file("a.json"), R"({"kind":"List","items":[{"kind":"Serv)");
    write_atomically(dir.file("b.json"), list_of({service_named("b", "8081")}));
    CHECK(eventually([&] { return first_port(store, "b") == 8081; }));
    CHECK(eventually(
        [&] { return metrics(source).find("file_errors_total 1\n") != std::string::npos; }));
    CHECK(has_service(store, "a"));
    CHECK(first_port(store, "a") == 80);

    // Repaired: its new content replaces the old.
    write_atomically(dir.file("a.json"), list_of({service_named("c")}));
    CHECK(eventually([&] { return has_service(store, "c"); }));
    CHECK_FALSE(has_service(store, "a"));
}

TEST_CASE("a single watched file follows renames over it") {
    TempDir dir;
    const std::string path = dir.file("cluster.json");
    write_in_place(path, list_of({service_named("a"), fixtures::kNode}));
    write_in_place(dir.file("other.json"), service_named("other"));
    Store store;
    FileSource source(path, store);
    REQUIRE(source.load().ok());
    CHECK_FALSE(has_service(store, "other"));  // only the named file
    REQUIRE(source.start().ok());

    write_atomically(path, list_of({service_named("a", "81")}));
    CHECK(eventually([&] { return first_port(store, "a") == 81; }));
    CHECK(store.snapshot()->nodes().empty());
    write_atomically(path, list_of({service_named("a", "82")}));
    CHECK(eventually([&] { return first_port(store, "a") == 82; }));
}

TEST_CASE("a ConfigMap volume's ..data symlink swap is followed") {
    // The kubelet's atomic writer: files are symlinks through "..data",
    // which is renamed to point at a new timestamped folder on update.
    TempDir dir;
    fs::create_directory(dir.file("..v1"));
    write_in_place(dir.file("..v1/cluster.json"), list_of({service_named("a")}));
    fs::create_directory_symlink("..v1", dir.file("..data"));
    fs::create_symlink("..data/cluster.json", dir.file("cluster.json"));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    REQUIRE(has_service(store, "a"));
    REQUIRE(source.start().ok());

    fs::create_directory(dir.file("..v2"));
    write_in_place(dir.file("..v2/cluster.json"), list_of({service_named("b")}));
    fs::create_directory_symlink("..v2", dir.file("..data_tmp"));
    fs::rename(dir.file("..data_tmp"), dir.file("..data"));
    CHECK(eventually([&] { return has_service(store, "b") && !has_service(store, "a"); }));
}

TEST_CASE("a folder that disappears keeps the last good state until it is back") {
    TempDir dir;
    const std::string folder = dir.file("cluster");
    fs::create_directory(folder);
    write_in_place(folder + "/a.json", list_of({service_named("a")}));
    Store store;
    FileSource source(folder, store);
    REQUIRE(source.load().ok());
    REQUIRE(source.start().ok());

    fs::rename(folder, dir.file("old"));
    CHECK(eventually(
        [&] { return metrics(source).find("file_errors_total 1\n") != std::string::npos; }));
    CHECK(has_service(store, "a"));

    fs::create_directory(folder);
    write_in_place(folder + "/b.json", list_of({service_named("b")}));
    CHECK(eventually([&] { return has_service(store, "b") && !has_service(store, "a"); }));
    // Watched again: later changes are seen too.
    write_atomically(folder + "/b.json", list_of({service_named("b", "90")}));
    CHECK(eventually([&] { return first_port(store, "b") == 90; }));
}

TEST_CASE("a change to one file re-reads that file only") {
    FolderWithHiddenWriter files({"a", "b", "c"});
    Store store;
    FileSource source(files.folder, store);
    REQUIRE(source.load().ok());
    CHECK(files_read(source) == 3);
    REQUIRE(source.start().ok());

    files.write_b_unseen(R"({"kind":"List","items":[)");
    write_atomically(files.in_folder("a.json"), service_named("a", "8080"));
    CHECK(eventually([&] { return first_port(store, "a") == 8080; }));
    source.stop();
    CHECK(files_read(source) == 4);   // a.json, not b.json nor c.json
    CHECK(file_errors(source) == 0);  // b.json's new content was not read
    CHECK(first_port(store, "b") == 80);
    CHECK(has_service(store, "c"));
}

TEST_CASE("renames into, out of and inside the folder, and a delete, reach the store") {
    TempDir dir;
    fs::create_directory(dir.file("folder"));
    const std::string folder = dir.file("folder");
    write_in_place(folder + "/a.json", service_named("a"));
    write_in_place(folder + "/b.json", service_named("b"));
    write_in_place(dir.file("outside.json"), service_named("d"));
    Store store;
    FileSource source(folder, store);
    REQUIRE(source.load().ok());
    REQUIRE(source.start().ok());

    fs::rename(dir.file("outside.json"), folder + "/d.json");  // in
    CHECK(eventually([&] { return has_service(store, "d"); }));
    fs::rename(folder + "/a.json", dir.file("a.json"));  // out
    CHECK(eventually([&] { return !has_service(store, "a"); }));
    fs::rename(folder + "/b.json", folder + "/.b.json");  // to a hidden name: out too
    CHECK(eventually([&] { return !has_service(store, "b"); }));
    fs::rename(folder + "/.b.json", folder + "/e.json");  // back under another name
    CHECK(eventually([&] { return has_service(store, "b"); }));
    fs::remove(folder + "/d.json");
    CHECK(eventually([&] { return !has_service(store, "d"); }));
    source.stop();
    CHECK(store.snapshot()->service_count() == 1);
    CHECK(files_read(source) == 2 + 2);  // the load, d.json and e.json
}

TEST_CASE("a pass re-reads the files named, in one batch to the store") {
    TempDir dir;
    write_in_place(dir.file("a.json"), service_named("a"));
    write_in_place(dir.file("b.json"), service_named("b"));
    write_in_place(dir.file("c.json"), service_named("c"));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    std::vector<std::vector<Change>> batches;
    store.subscribe([&](const std::vector<Change>& changes) { batches.push_back(changes); });

    write_in_place(dir.file("a.json"), service_named("a", "81"));
    write_in_place(dir.file("b.json"), service_named("b", "82"));
    write_in_place(dir.file("c.json"), service_named("c", "83"));
    CHECK(source.reread(touched({"a.json", "b.json", "notes.txt", "a.json.tmp~"})).ok());
    CHECK(files_read(source) == 3 + 2);
    REQUIRE(batches.size() == 1);
    CHECK(batches[0].size() == 2);
    CHECK(first_port(store, "a") == 81);
    CHECK(first_port(store, "b") == 82);
    CHECK(first_port(store, "c") == 80);  // not named: not read

    // An unchanged file is read, and nothing is written.
    CHECK(source.reread(touched({"a.json"})).ok());
    CHECK(batches.size() == 1);
    CHECK_THAT(metrics(source), Contains("switchboard_source_reloads_total 2\n"));
}

TEST_CASE("events name the entries they touch; an overflow or the folder's end asks for all") {
    constexpr int kFolder = 3;
    TouchedNames names;
    const std::string events = event_record(kFolder, IN_CREATE, "a.json.tmp") +
                               event_record(kFolder, IN_MOVED_TO, "a.json") +
                               event_record(kFolder, IN_DELETE, "b.json") +
                               event_record(kFolder + 1, IN_CREATE, "other.json");
    CHECK_FALSE(note_folder_events(events, kFolder, names));
    CHECK(names.names == std::set<std::string>{"a.json.tmp", "a.json", "b.json"});
    CHECK_FALSE(names.everything);

    TouchedNames overflow;
    CHECK_FALSE(note_folder_events(event_record(-1, IN_Q_OVERFLOW), kFolder, overflow));
    CHECK(overflow.everything);

    TouchedNames attributes;  // the folder's own, e.g. chmod: perhaps unreadable now
    CHECK_FALSE(
        note_folder_events(event_record(kFolder, IN_ATTRIB | IN_ISDIR), kFolder, attributes));
    CHECK(attributes.everything);

    TouchedNames gone;
    CHECK(note_folder_events(
        event_record(kFolder, IN_MOVE_SELF) + event_record(kFolder, IN_IGNORED), kFolder, gone));
    CHECK(gone.everything);
}

TEST_CASE("an overflow re-reads every file") {
    FolderWithHiddenWriter files({"a", "b"});
    Store store;
    FileSource source(files.folder, store);
    REQUIRE(source.load().ok());

    files.write_b_unseen(service_named("b", "8081"));
    write_in_place(files.in_folder("c.json"), service_named("c"));
    CHECK(source.reread(touched({"a.json"})).ok());
    CHECK(first_port(store, "b") == 80);
    CHECK_FALSE(has_service(store, "c"));

    TouchedNames lost;
    note_folder_events(event_record(-1, IN_Q_OVERFLOW), 1, lost);
    CHECK(source.reread(lost).ok());
    CHECK(first_port(store, "b") == 8081);
    CHECK(has_service(store, "c"));
    CHECK(files_read(source) == 2 + 1 + 3);
}

TEST_CASE("of two files defining an object the later in name order wins, as files change") {
    TempDir dir;
    write_in_place(dir.file("a.json"), list_of({service_named("dup", "81"), service_named("a")}));
    write_in_place(dir.file("b.json"), list_of({service_named("dup", "82")}));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());
    CHECK(first_port(store, "dup") == 82);

    // The loser changes: nothing to write.
    int batches = 0;
    store.subscribe([&](const std::vector<Change>&) { ++batches; });
    write_in_place(dir.file("a.json"), list_of({service_named("dup", "83"), service_named("a")}));
    CHECK(source.reread(touched({"a.json"})).ok());
    CHECK(first_port(store, "dup") == 82);
    CHECK(batches == 0);

    // The winner drops it: the other file's (latest) object takes over.
    write_in_place(dir.file("b.json"), list_of({service_named("b")}));
    CHECK(source.reread(touched({"b.json"})).ok());
    CHECK(first_port(store, "dup") == 83);
    CHECK(has_service(store, "b"));

    // A later file defines it again, then is deleted.
    write_in_place(dir.file("c.json"), service_named("dup", "84"));
    CHECK(source.reread(touched({"c.json"})).ok());
    CHECK(first_port(store, "dup") == 84);
    fs::remove(dir.file("c.json"));
    CHECK(source.reread(touched({"c.json"})).ok());
    CHECK(first_port(store, "dup") == 83);

    // The last file defining it is deleted: it is gone.
    fs::remove(dir.file("a.json"));
    CHECK(source.reread(touched({"a.json"})).ok());
    CHECK_FALSE(has_service(store, "dup"));
    CHECK_FALSE(has_service(store, "a"));
    CHECK(has_service(store, "b"));

    // In one file, the later item wins.
    write_in_place(dir.file("d.json"),
                   list_of({service_named("twice", "85"), service_named("twice", "86")}));
    CHECK(source.reread(touched({"d.json"})).ok());
    CHECK(first_port(store, "twice") == 86);
}

TEST_CASE("a file broken then deleted drops its objects and its error") {
    TempDir dir;
    write_in_place(dir.file("a.json"), service_named("a"));
    write_in_place(dir.file("b.json"), service_named("b"));
    Store store;
    FileSource source(dir.path(), store);
    REQUIRE(source.load().ok());

    write_in_place(dir.file("b.json"), R"({"kind":"List","items":[)");
    auto broken = source.reread(touched({"b.json"}));
    REQUIRE_FALSE(broken.ok());
    CHECK_THAT(broken.error().describe(), Contains(dir.file("b.json")));
    CHECK(has_service(store, "b"));
    // Another file's pass still reports the file in error.
    CHECK_FALSE(source.reread(touched({"a.json"})).ok());
    CHECK(file_errors(source) == 1);

    fs::remove(dir.file("b.json"));
    CHECK(source.reread(touched({"b.json"})).ok());
    CHECK_FALSE(has_service(store, "b"));
    CHECK(has_service(store, "a"));
}
