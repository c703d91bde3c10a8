// docs/kube-proxy-config.md's tables against the code: each field and flag
// a table names has, in the option table, the status the table gives it
// (honoured, ignored, refused), and every field of each version and every
// kube-proxy flag of the code is named in a table.
#include <catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "proxy/options/config_fields.h"
#include "proxy/options/option_table.h"

using namespace sb;
using namespace sb::proxy;

namespace {

struct DocRow {
    int line;
    std::vector<std::string> names;  // the backquoted words of the first cell
    std::string status;
};

// The rows of each table of the page, by the heading above it and the
// table's first column ("field", "flag").
struct DocTables {
    std::map<std::string, std::vector<DocRow>> fields;  // by heading
    std::vector<DocRow> flags;
};

std::vector<std::string> cells_of(const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line.substr(1)) {
        if (c == '`') quoted = !quoted;
        if (c == '|' && !quoted) {
            cells.push_back(cell);
            cell.clear();
            continue;
        }
        cell += c;
    }
    return cells;
}

std::vector<std::string> backquoted(const std::string& text) {
    std::vector<std::string> words;
    for (size_t open = text.find('`'); open != std::string::npos;) {
        const size_t close = text.find('`', open + 1);
        if (close == std::string::npos) break;
        words.push_back(text.substr(open + 1, close - open - 1));
        open = text.find('`', close + 1);
    }
    return words;
}

std::string trimmed(const std::string& text) {
    const size_t first = text.find_first_not_of(' ');
    const size_t last = text.find_last_not_of(' ');
    return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

DocTables read_doc_tables() {
    std::ifstream file(std::string(SWITCHBOARD_TEST_DATA) + "/../../docs/kube-proxy-config.md");
    REQUIRE(file.good());
    DocTables tables;
    std::string heading;
    std::string kind;  // the current table's first column, "" outside a table
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
        if (line.starts_with("#")) heading = trimmed(line.substr(line.find(' ')));
        if (!line.starts_with("|")) {
            kind.clear();
            continue;
        }
        const auto cells = cells_of(line);
        if (kind.empty()) {  // the header
            kind = cells.size() >= 2 && trimmed(cells[1]) == "status" ? trimmed(cells[0]) : "-";
            continue;
        }
        if (line.starts_with("| ---") || kind == "-") continue;
        DocRow row{number, backquoted(cells[0]), trimmed(cells[1])};
        if (kind == "field") tables.fields[heading].push_back(row);
        if (kind == "flag") tables.flags.push_back(row);
    }
    return tables;
}

std::string status_of(const OptionSpec& spec) {
    if (spec.role == OptionRole::kIgnored) return "ignored";
    if (spec.role == OptionRole::kRefused) return "refused";
    return "honoured";
}

// What the code gives the field `name` ("winkernel.*": the field or map
// winkernel) of `version`: its row's status, "refused" for a field of no
// row (v1alpha2's strict decoding; v1alpha1 would warn: none is listed).
std::string field_status(const std::string& name, ConfigVersion version) {
    std::string path = name.ends_with(".*") ? name.substr(0, name.size() - 2) : name;
    if (version == ConfigVersion::kV1alpha2 && is_v1alpha2_bind_field(path)) return "honoured";
    std::set<std::string> statuses;
    for (const auto& entry : config_fields(version)) {
        const std::string field(entry.field.path);
        if (field == path || (name.ends_with(".*") && field.starts_with(path + "."))) {
            statuses.insert(status_of(*entry.spec));
        }
    }
    if (statuses.empty()) return "refused";
    return statuses.size() == 1 ? *statuses.begin() : "mixed";
}

const std::set<std::string> kStatuses = {"honoured", "ignored", "refused"};

}  // namespace

TEST_CASE("docs/kube-proxy-config.md: every field's status is the code's, every field is listed") {
    const DocTables tables = read_doc_tables();
    for (auto [heading, version] : {std::pair{std::string("Fields"), ConfigVersion::kV1alpha1},
                                    std::pair{std::string("v1alpha2"), ConfigVersion::kV1alpha2}}) {
        INFO("the table under ### " << heading);
        REQUIRE(tables.fields.count(heading) == 1);
        std::set<std::string> listed;
        for (const DocRow& row : tables.fields.at(heading)) {
            INFO("docs/kube-proxy-config.md:" << row.line);
            CHECK(kStatuses.count(row.status) == 1);
            for (const auto& name : row.names) {
                if (name == "apiVersion" || name == "kind") continue;
                INFO(name);
                CHECK(field_status(name, version) == row.status);
                listed.insert(name.ends_with(".*") ? name.substr(0, name.size() - 2) : name);
            }
        }
        for (const auto& entry : config_fields(version)) {
            const std::string path(entry.field.path);
            bool found = listed.count(path) != 0;
            for (const auto& name : listed) found = found || path.starts_with(name + ".");
            INFO(path << " is a field of the code");
            CHECK(found);
        }
    }
}

TEST_CASE("docs/kube-proxy-config.md: every flag's status is the code's, kube-proxy's are listed") {
    const DocTables tables = read_doc_tables();
    REQUIRE_FALSE(tables.flags.empty());
    std::set<std::string> listed;
    for (const DocRow& row : tables.flags) {
        INFO("docs/kube-proxy-config.md:" << row.line);
        CHECK(kStatuses.count(row.status) == 1);
        for (const auto& name : row.names) {
            if (!name.starts_with("-")) continue;
            INFO(name);
            const OptionSpec* spec = find_flag(name);
            REQUIRE(spec != nullptr);
            CHECK(status_of(*spec) == row.status);
            listed.insert(name);
        }
    }
    for (const auto& spec : option_table()) {
        if (spec.names.empty() || spec.role == OptionRole::kCommandLine) continue;
        const std::string name(spec.names.front());
        INFO(name << " is a kube-proxy flag of the code");
        CHECK(listed.count(name) == 1);
    }
}
