#include "rules/iptables/iptc.h"

#include <libiptc/libiptc.h>

#include <cerrno>
#include <fstream>

#include <fmt/format.h>

#include "rules/iptables/iptc_entry.h"
#include "rules/iptables/table_snapshot.h"
#include "rules/kernel/xtables_lock.h"

// libip6tc.h, unlike libiptc.h, has no extern "C" block of its own.
extern "C" {
#include <libiptc/libip6tc.h>
}

namespace sb::rules::iptables {

namespace {

// The two families' spellings of the same libiptc calls.
struct V4 {
    using Entry = ipt_entry;
    static constexpr IpFamily kFamily = IpFamily::kV4;
    static constexpr const char* kTool = "iptables";
    static xtc_handle* init(const char* table) { return iptc_init(table); }
    static void free(xtc_handle* h) { iptc_free(h); }
    static const char* first_chain(xtc_handle* h) { return iptc_first_chain(h); }
    static const char* next_chain(xtc_handle* h) { return iptc_next_chain(h); }
    static bool builtin(const char* c, xtc_handle* h) { return iptc_builtin(c, h) != 0; }
    static const Entry* first_rule(const char* c, xtc_handle* h) { return iptc_first_rule(c, h); }
    static const Entry* next_rule(const Entry* e, xtc_handle* h) { return iptc_next_rule(e, h); }
    static const char* get_target(const Entry* e, xtc_handle* h) { return iptc_get_target(e, h); }
    static int create_chain(const char* c, xtc_handle* h) { return iptc_create_chain(c, h); }
    static int flush(const char* c, xtc_handle* h) { return iptc_flush_entries(c, h); }
    static int delete_chain(const char* c, xtc_handle* h) { return iptc_delete_chain(c, h); }
    static int delete_num(const char* c, unsigned n, xtc_handle* h) {
        return iptc_delete_num_entry(c, n, h);
    }
    static int append(const char* c, const Entry* e, xtc_handle* h) {
        return iptc_append_entry(c, e, h);
    }
    static int insert(const char* c, const Entry* e, unsigned n, xtc_handle* h) {
        return iptc_insert_entry(c, e, n, h);
    }
    static int commit(xtc_handle* h) { return iptc_commit(h); }
    static const char* strerror(int e) { return iptc_strerror(e); }
};

struct V6 {
    using Entry = ip6t_entry;
    static constexpr IpFamily kFamily = IpFamily::kV6;
    static constexpr const char* kTool = "ip6tables";
    static xtc_handle* init(const char* table) { return ip6tc_init(table); }
    static void free(xtc_handle* h) { ip6tc_free(h); }
    static const char* first_chain(xtc_handle* h) { return ip6tc_first_chain(h); }
    static const char* next_chain(xtc_handle* h) { return ip6tc_next_chain(h); }
    static bool builtin(const char* c, xtc_handle* h) { return ip6tc_builtin(c, h) != 0; }
    static const Entry* first_rule(const char* c, xtc_handle* h) { return ip6tc_first_rule(c, h); }
    static const Entry* next_rule(const Entry* e, xtc_handle* h) { return ip6tc_next_rule(e, h); }
    static const char* get_target(const Entry* e, xtc_handle* h) { return ip6tc_get_target(e, h); }
    static int create_chain(const char* c, xtc_handle* h) { return ip6tc_create_chain(c, h); }
    static int flush(const char* c, xtc_handle* h) { return ip6tc_flush_entries(c, h); }
    static int delete_chain(const char* c, xtc_handle* h) { return ip6tc_delete_chain(c, h); }
    static int delete_num(const char* c, unsigned n, xtc_handle* h) {
        return ip6tc_delete_num_entry(c, n, h);
    }
    static int append(const char* c, const Entry* e, xtc_handle* h) {
        return ip6tc_append_entry(c, e, h);
    }
    static int insert(const char* c, const Entry* e, unsigned n, xtc_handle* h) {
        return ip6tc_insert_entry(c, e, n, h);
    }
    static int commit(xtc_handle* h) { return ip6tc_commit(h); }
    static const char* strerror(int e) { return ip6tc_strerror(e); }
};

// "iptables nat table: WHAT: libiptc's message", with errno.
template <class Ops>
Error failure(const std::string& table, const std::string& what) {
    const int e = errno;
    return make_error(ErrorCode::kIo,
                      fmt::format("{} {} table: {}: {}", Ops::kTool, table, what, Ops::strerror(e)),
                      e);
}

// A libiptc handle: the table as read by iptc_init, edited in memory.
// Precondition of construction: `handle` is not null; owned, freed here.
template <class Ops>
class LibiptcCopy final : public TableCopy {
  public:
    LibiptcCopy(std::string table, xtc_handle* handle) : table_(std::move(table)), h_(handle) {}
    ~LibiptcCopy() override { Ops::free(h_); }
    LibiptcCopy(const LibiptcCopy&) = delete;
    LibiptcCopy& operator=(const LibiptcCopy&) = delete;

    std::vector<std::string> chains(bool builtin) const override {
        std::vector<std::string> out;
        for (const char* c = Ops::first_chain(h_); c; c = Ops::next_chain(h_)) {
            if (Ops::builtin(c, h_) == builtin) out.emplace_back(c);
        }
        return out;
    }

    std::vector<std::string> rule_targets(const std::string& chain) const override {
        std::vector<std::string> out;
        for (auto* e = Ops::first_rule(chain.c_str(), h_); e; e = Ops::next_rule(e, h_)) {
            out.emplace_back(Ops::get_target(e, h_));
        }
        return out;
    }

    std::vector<DestinationMatch> destination_matches(const std::string& chain) const override {
        std::vector<DestinationMatch> out;
        for (auto* e = Ops::first_rule(chain.c_str(), h_); e; e = Ops::next_rule(e, h_)) {
            out.push_back(decode_destination_match(e, Ops::kFamily));
            out.back().target = Ops::get_target(e, h_);
        }
        return out;
    }

    Status create_chain(const std::string& chain) override {
        if (!Ops::create_chain(chain.c_str(), h_)) {
            return fail(fmt::format("create chain {}", chain));
        }
        return {};
    }
    Status flush_chain(const std::string& chain) override {
        if (!Ops::flush(chain.c_str(), h_)) return fail(fmt::format("flush {}", chain));
        return {};
    }
    Status delete_chain(const std::string& chain) override {
        if (!Ops::delete_chain(chain.c_str(), h_)) {
            return fail(fmt::format("delete chain {}", chain));
        }
        return {};
    }
    Status delete_rule(const std::string& chain, size_t index) override {
        if (!Ops::delete_num(chain.c_str(), static_cast<unsigned>(index), h_)) {
            return fail(fmt::format("delete rule in {}", chain));
        }
        return {};
    }
    Status append_rule(const std::string& chain, const Rule& rule) override {
        const EntryBuffer e = encode_entry(rule, Ops::kFamily);
        if (!Ops::append(chain.c_str(), e.template as<typename Ops::Entry>(), h_)) {
            return fail(fmt::format("append to {}: {}", chain, rule_text(rule)));
        }
        return {};
    }
    Status insert_rule(const std::string& chain, const Rule& rule, size_t index) override {
        const EntryBuffer e = encode_entry(rule, Ops::kFamily);
        if (!Ops::insert(chain.c_str(), e.template as<typename Ops::Entry>(),
                         static_cast<unsigned>(index), h_)) {
            return fail(fmt::format("insert into {}", chain));
        }
        return {};
    }
    Status commit() override {
        if (!Ops::commit(h_)) return fail("commit");
        return {};
    }

  private:
    Error fail(const std::string& what) const { return failure<Ops>(table_, what); }

    std::string table_;
    xtc_handle* h_;
};

template <class Ops>
Result<std::unique_ptr<TableCopy>> open_table(const std::string& table) {
    xtc_handle* h = Ops::init(table.c_str());
    if (!h) return failure<Ops>(table, "init");
    return std::unique_ptr<TableCopy>(std::make_unique<LibiptcCopy<Ops>>(table, h));
}

class SnapshotBackup final : public TableBackup {
  public:
    explicit SnapshotBackup(TableSnapshot snapshot) : snapshot_(std::move(snapshot)) {}
    Status restore() const override { return snapshot_.restore(); }

  private:
    TableSnapshot snapshot_;
};

class FileLockHold final : public XtablesLockHold {
  public:
    bool ok() const { return lock_.ok(); }

  private:
    XtablesLock lock_;
};

class LibiptcXtables final : public Xtables {
  public:
    Result<std::unique_ptr<XtablesLockHold>> lock() override {
        auto hold = std::make_unique<FileLockHold>();
        if (!hold->ok()) {
            return make_error(ErrorCode::kIo, "xtables lock /run/xtables.lock is busy");
        }
        return std::unique_ptr<XtablesLockHold>(std::move(hold));
    }

    // The kernel lists the tables it has instantiated; without the file it
    // has no x_tables of this family at all.
    Result<bool> has_table(IpFamily family, const std::string& table) override {
        const char* path =
            family == IpFamily::kV4 ? "/proc/net/ip_tables_names" : "/proc/net/ip6_tables_names";
        std::ifstream names(path);
        if (!names) {
            if (errno == ENOENT) return false;
            return make_error(ErrorCode::kIo, fmt::format("read {}", path), errno);
        }
        std::string line;
        while (std::getline(names, line)) {
            if (line == table) return true;
        }
        return false;
    }

    Result<std::unique_ptr<TableCopy>> open(IpFamily family, const std::string& table) override {
        // Qualified: the free function, not Xtables::open_table.
        return family == IpFamily::kV4 ? iptables::open_table<V4>(table)
                                       : iptables::open_table<V6>(table);
    }

    Result<std::unique_ptr<TableBackup>> back_up(IpFamily family,
                                                 const std::string& table) override {
        auto snapshot = TableSnapshot::take(family, table);
        if (!snapshot) return snapshot.error();
        return std::unique_ptr<TableBackup>(
            std::make_unique<SnapshotBackup>(std::move(snapshot.value())));
    }
};

}  // namespace

std::unique_ptr<Xtables> make_libiptc_xtables() {
    return std::make_unique<LibiptcXtables>();
}

}  // namespace sb::rules::iptables
