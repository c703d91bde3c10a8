#include "proxy/http/process_metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>
#include "base/file_text.h"

namespace sb::proxy {

namespace {

// A /proc or /sys entry's text; nullopt when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) return std::nullopt;
    return std::move(*text);
}

std::optional<double> parse_number(std::string_view text) {
    uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return static_cast<double>(value);
}

std::vector<std::string_view> split_spaces(std::string_view text) {
    std::vector<std::string_view> fields;
    size_t position = 0;
    while (position < text.size()) {
        while (position < text.size() && (text[position] == ' ' || text[position] == '\t')) {
            ++position;
        }
        const size_t start = position;
        while (position < text.size() && text[position] != ' ' && text[position] != '\t' &&
               text[position] != '\n') {
            ++position;
        }
        if (position > start) fields.push_back(text.substr(start, position - start));
        if (position < text.size() && text[position] == '\n') break;
    }
    return fields;
}

// The soft limit of the limits line starting with `name`; "unlimited" is
// 2^64 - 1, as procfs reads it.
std::optional<double> soft_limit(const std::string& limits, std::string_view name) {
    std::istringstream lines(limits);
    std::string line;
    while (std::getline(lines, line)) {
        if (!std::string_view(line).starts_with(name)) continue;
        auto fields = split_spaces(std::string_view(line).substr(name.size()));
        if (fields.empty()) return std::nullopt;
        if (fields[0] == "unlimited") return 18446744073709551615.0;
        return parse_number(fields[0]);
    }
    return std::nullopt;
}

std::optional<double> boot_time(const std::string& stat) {
    std::istringstream lines(stat);
    std::string line;
    while (std::getline(lines, line)) {
        if (!std::string_view(line).starts_with("btime ")) continue;
        auto fields = split_spaces(std::string_view(line).substr(6));
        return fields.empty() ? std::nullopt : parse_number(fields[0]);
    }
    return std::nullopt;
}

std::optional<double> count_entries(const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (!dir) return std::nullopt;
    double count = 0;
    while (const dirent* entry = ::readdir(dir)) {
        std::string_view name = entry->d_name;
        if (name != "." && name != "..") ++count;
    }
    ::closedir(dir);
    return count;
}

}  // namespace

ProcessStats read_process_stats(const std::string& proc_root) {
    ProcessStats stats;
    if (auto stat = read_text(proc_root + "/self/stat")) {
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses,
        // so the fields start after the last ')'. Field 3 (state) is [0].
        const auto close = stat->rfind(')');
        if (close != std::string::npos) {
            auto fields = split_spaces(std::string_view(*stat).substr(close + 1));
            if (fields.size() > 21) {
                const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
                const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
                auto utime = parse_number(fields[11]);
                auto stime = parse_number(fields[12]);
                auto start = parse_number(fields[19]);
                auto vsize = parse_number(fields[20]);
                auto rss = parse_number(fields[21]);
                if (utime && stime) stats.cpu_seconds = (*utime + *stime) / ticks;
                if (vsize) stats.virtual_bytes = *vsize;
                if (rss) stats.resident_bytes = *rss * page;
                auto btime = read_text(proc_root + "/stat");
                auto boot = btime ? boot_time(*btime) : std::nullopt;
                if (start && boot) stats.start_time_seconds = *boot + *start / ticks;
            }
        }
    }
    stats.open_fds = count_entries(proc_root + "/self/fd");
    if (auto limits = read_text(proc_root + "/self/limits")) {
        stats.max_fds = soft_limit(*limits, "Max open files");
        stats.virtual_max_bytes = soft_limit(*limits, "Max address space");
    }
    return stats;
}

void write_process_metrics(metrics::TextWriter& out, const ProcessStats& stats) {
    using metrics::Type;
    auto write = [&out](const char* name, const char* help, Type type,
                        const std::optional<double>& value) {
        if (!value) return;
        out.family({name, help, type, {}});
        out.sample({}, *value);
    };
    write("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
          Type::kCounter, stats.cpu_seconds);
    write("process_max_fds", "Maximum number of open file descriptors.", Type::kGauge,
          stats.max_fds);
    write("process_open_fds", "Number of open file descriptors.", Type::kGauge, stats.open_fds);
    write("process_resident_memory_bytes", "Resident memory size in bytes.", Type::kGauge,
          stats.resident_bytes);
    write("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          Type::kGauge, stats.start_time_seconds);
    write("process_virtual_memory_bytes", "Virtual memory size in bytes.", Type::kGauge,
          stats.virtual_bytes);
    write("process_virtual_memory_max_bytes",
          "Maximum amount of virtual memory available in bytes.", Type::kGauge,
          stats.virtual_max_bytes);
}

}  // namespace sb::proxy
