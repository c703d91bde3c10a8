// docs/corefile.md's option tables against the code: every row's example
// goes through the parser and the mapping (`switchboard plan`'s path), and
// its status must be what happens: "refused" rows are refused, "warned"
// rows accepted with a warning, "honoured" and "checked" rows accepted
// without one. A plugin switchboard maps without a table fails too.
#include <catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dns/corefile/config.h"

using namespace sb;
using namespace sb::dns;

namespace {

// The plugins config.cpp's plugin_table() maps.
const std::vector<std::string> kMappedPlugins = {
    "kubernetes", "forward", "cache",  "hosts",    "log",         "errors", "prometheus", "health",
    "ready",      "bind",    "reload", "timeouts", "loadbalance", "loop",   "autopath"};

const std::set<std::string> kStatuses = {"honoured", "checked", "warned", "refused"};

struct OptionRow {
    std::string plugin;
    std::string option;
    std::string status;
    std::string example;
    int line = 0;  // in docs/corefile.md
};

std::vector<std::string> doc_lines() {
    std::ifstream file(SWITCHBOARD_SOURCE_ROOT "/docs/corefile.md");
    REQUIRE(file.good());
    std::vector<std::string> lines;
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
}

// A table row's cells, trimmed; `\|` is a `|` inside a cell.
std::vector<std::string> cells_of(const std::string& row) {
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < row.size(); ++i) {
        if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
            cell += '|';
            ++i;
        } else if (row[i] == '|') {
            const size_t first = cell.find_first_not_of(' ');
            const size_t last = cell.find_last_not_of(' ');
            cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
            cell.clear();
        } else {
            cell += row[i];
        }
    }
    return cells;
}

// The rows of the table that starts after lines[from] and before the next
// heading; `header_ok` false when there is a table without the columns.
std::vector<OptionRow> table_after(const std::vector<std::string>& lines, size_t from,
                                   const std::string& plugin, bool& header_ok) {
    std::vector<OptionRow> rows;
    std::map<std::string, size_t> column;
    header_ok = true;
    for (size_t i = from + 1; i < lines.size() && !lines[i].starts_with("#"); ++i) {
        if (!lines[i].starts_with("|")) continue;
        auto cells = cells_of(lines[i]);
        if (column.empty()) {
            for (size_t c = 0; c < cells.size(); ++c) column[cells[c]] = c;
            header_ok = column.contains("option") && column.contains("status") &&
                        column.contains("example");
            if (!header_ok) return rows;
            continue;
        }
        if (cells.empty() || cells[0].starts_with("---")) continue;
        REQUIRE(cells.size() > column["example"]);
        rows.push_back(OptionRow{plugin, cells[column["option"]], cells[column["status"]],
                                 cells[column["example"]], static_cast<int>(i + 1)});
    }
    if (column.empty()) header_ok = false;
    return rows;
}

size_t heading(const std::vector<std::string>& lines, const std::string& text) {
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i] == text) return i;
    }
    return lines.size();
}

// The option table of `plugin`, under "### Options of `plugin`".
std::vector<OptionRow> plugin_table(const std::vector<std::string>& lines,
                                    const std::string& plugin) {
    const size_t at = heading(lines, "### Options of `" + plugin + "`");
    if (at == lines.size()) FAIL("docs/corefile.md: no \"### Options of `" << plugin << "`\"");
    bool header_ok = false;
    auto rows = table_after(lines, at, plugin, header_ok);
    INFO("docs/corefile.md:" << at + 1 << ": " << plugin
                             << "'s table needs option, status and example columns");
    CHECK(header_ok);
    return rows;
}

// The example cell's directive: the code span, `{ ` opening its block,
// ` ; ` between the block's lines, ` }` closing it.
std::string directive_of(const std::string& example) {
    const size_t open = example.find('`');
    const size_t close = example.rfind('`');
    REQUIRE(open != std::string::npos);
    REQUIRE(close > open);
    std::string text = example.substr(open + 1, close - open - 1);
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, "{ ") == 0) {
            out += "{\n";
            ++i;
        } else if (text.compare(i, 3, " ; ") == 0) {
            out += "\n";
            i += 2;
        } else if (text.compare(i, 2, " }") == 0) {
            out += "\n}";
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

void check_row(const OptionRow& row) {
    const std::string directive = directive_of(row.example);
    const std::string corefile = ".:53 {\n" + directive + "\n}\n";
    INFO("docs/corefile.md:" << row.line << ": " << row.plugin << " " << row.option << " ("
                             << row.status << "): " << corefile);
    CHECK(kStatuses.contains(row.status));
    CHECK(directive.starts_with(row.plugin));
    auto parsed = parse_corefile(corefile, "Corefile", nullptr);
    INFO((parsed ? std::string() : parsed.error().message));
    CHECK(parsed.ok());
    if (!parsed) return;
    auto config = map_corefile(*parsed, "Corefile");
    if (row.status == "refused") {
        CHECK_FALSE(config.ok());
        return;
    }
    if (!config) {
        // CHECK, not REQUIRE: every wrong row of the doc is reported in one run.
        FAIL_CHECK(config.error().message);
        return;
    }
    INFO((config->warnings.empty() ? std::string() : config->warnings.front()));
    if (row.status == "warned") {
        CHECK_FALSE(config->warnings.empty());
    } else {
        CHECK(config->warnings.empty());
    }
}

}  // namespace

TEST_CASE("docs/corefile.md: every option row's status is what the code does") {
    const auto lines = doc_lines();
    for (const auto& plugin : kMappedPlugins) {
        const auto rows = plugin_table(lines, plugin);
        CHECK_FALSE(rows.empty());
        for (const auto& row : rows) check_row(row);
    }
}
