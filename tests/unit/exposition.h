// A strict reader of the Prometheus text exposition format 0.0.4, for tests
// of what /metrics prints: it parses the whole text, records every problem
// (a sample before its family's TYPE, a second HELP or TYPE for a family, a
// family split in two blocks, a duplicate series, a malformed line or label
// escape) and answers look-ups by series. Header-only.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sb::testing {

struct Exposition {
    struct FamilyInfo {
        std::string type;
        std::string help;
        int help_lines = 0;
        int type_lines = 0;
    };
    std::map<std::string, FamilyInfo> families;
    // "name{a=\"x\",b=\"y\"}" (labels as printed, unescaped values
    // re-escaped) -> value text.
    std::map<std::string, std::string> samples;
    std::vector<std::string> problems;  // empty when the text is valid

    bool has_family(const std::string& name) const { return families.count(name) > 0; }
    // The value of a series written as it is printed; nullopt when absent.
    std::optional<double> value(const std::string& series) const {
        auto it = samples.find(series);
        if (it == samples.end()) return std::nullopt;
        if (it->second == "+Inf") return HUGE_VAL;
        if (it->second == "-Inf") return -HUGE_VAL;
        return std::strtod(it->second.c_str(), nullptr);
    }
};

namespace exposition_detail {

inline bool name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

inline bool valid_name(const std::string& name) {
    if (name.empty()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
        if (!name_char(name[i], i == 0)) return false;
    }
    return true;
}

// The family a sample name belongs to (histogram suffixes stripped when the
// stripped name is a histogram family).
inline std::string family_of(const std::string& sample, const Exposition& out) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s = suffix;
        if (sample.size() > s.size() &&
            sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
            const std::string base = sample.substr(0, sample.size() - s.size());
            auto it = out.families.find(base);
            if (it != out.families.end() && it->second.type == "histogram") return base;
        }
    }
    return sample;
}

}  // namespace exposition_detail

inline Exposition parse_exposition(const std::string& text) {
    using namespace exposition_detail;
    Exposition out;
    std::set<std::string> finished;  // families whose block has ended
    std::string current;             // the family of the block being read
    auto problem = [&](const std::string& what, const std::string& line) {
        out.problems.push_back(what + ": " + line);
    };
    auto enter = [&](const std::string& family, const std::string& line) {
        if (family == current) return;
        if (!current.empty()) finished.insert(current);
        if (finished.count(family)) problem("family split in two blocks", line);
        current = family;
    };
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            problem("last line without a newline", text.substr(start));
            end = text.size();
        }
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        if (line.empty()) continue;
        if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
            const bool help = line[2] == 'H';
            const size_t space = line.find(' ', 7);
            const std::string name =
                line.substr(7, space == std::string::npos ? std::string::npos : space - 7);
            const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
            if (!valid_name(name)) problem("bad family name", line);
            enter(name, line);
            auto& family = out.families[name];
            if (help) {
                ++family.help_lines;
                family.help = rest;
            } else {
                ++family.type_lines;
                if (rest != "counter" && rest != "gauge" && rest != "histogram" &&
                    rest != "summary" && rest != "untyped") {
                    problem("bad type", line);
                }
                if (family.type_lines == 1 && !out.samples.empty()) {
                    for (const auto& [series, value] : out.samples) {
                        if (series.rfind(name, 0) == 0 &&
                            family_of(series.substr(0, series.find('{')), out) == name) {
                            problem("TYPE after a sample of its family", line);
                        }
                    }
                }
                family.type = rest;
            }
            continue;
        }
        if (line[0] == '#') continue;  // a comment
        // name{labels} value
        size_t i = 0;
        while (i < line.size() && name_char(line[i], i == 0)) ++i;
        const std::string name = line.substr(0, i);
        if (!valid_name(name)) {
            problem("bad sample name", line);
            continue;
        }
        std::string series = name;
        std::set<std::string> label_names;
        if (i < line.size() && line[i] == '{') {
            series += '{';
            ++i;
            bool first = true;
            while (i < line.size() && line[i] != '}') {
                size_t label_start = i;
                while (i < line.size() && name_char(line[i], i == label_start)) ++i;
                const std::string label = line.substr(label_start, i - label_start);
                if (label.empty() || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
                    problem("bad label", line);
                    break;
                }
                if (!label_names.insert(label).second) problem("repeated label", line);
                i += 2;
                std::string value;
                while (i < line.size() && line[i] != '"') {
                    if (line[i] == '\\') {
                        if (i + 1 >= line.size() ||
                            (line[i + 1] != '\\' && line[i + 1] != '"' && line[i + 1] != 'n')) {
                            problem("bad escape", line);
                        }
                        value += line.substr(i, 2);
                        i += 2;
                        continue;
                    }
                    value += line[i++];
                }
                if (i >= line.size()) {
                    problem("unterminated label value", line);
                    break;
                }
                ++i;  // closing quote
                series += (first ? "" : ",") + label + "=\"" + value + "\"";
                first = false;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (i >= line.size()) {
                problem("unterminated labels", line);
                continue;
            }
            series += '}';
            ++i;
        }
        if (i >= line.size() || line[i] != ' ') {
            problem("no value", line);
            continue;
        }
        const std::string value = line.substr(i + 1);
        char* parsed_end = nullptr;
        std::strtod(value.c_str(), &parsed_end);
        if (value != "+Inf" && value != "-Inf" && value != "NaN" &&
            (value.empty() || *parsed_end != '\0')) {
            problem("bad value", line);
        }
        const std::string family = family_of(name, out);
        auto it = out.families.find(family);
        if (it == out.families.end() || it->second.type_lines == 0) {
            problem("sample without a TYPE before it", line);
        } else {
            if (it->second.type == "histogram" && name == family) {
                problem("histogram sample without a suffix", line);
            }
            if (it->second.type == "histogram" && name == family + "_bucket" &&
                !label_names.count("le")) {
                problem("bucket without le", line);
            }
        }
        enter(family, line);
        if (!out.samples.emplace(series, value).second) problem("duplicate series", line);
    }
    for (const auto& [name, family] : out.families) {
        if (family.help_lines != 1)
            problem("HELP lines: " + std::to_string(family.help_lines), name);
        if (family.type_lines != 1)
            problem("TYPE lines: " + std::to_string(family.type_lines), name);
    }
    return out;
}

}  // namespace sb::testing
