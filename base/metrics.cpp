#include "base/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sb::metrics {

const char* to_string(Type type) {
    switch (type) {
        case Type::kCounter:
            return "counter";
        case Type::kGauge:
            return "gauge";
        case Type::kHistogram:
            return "histogram";
    }
    return "untyped";
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    // Below 2^53 every integer is exact in a double.
    if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
        return fmt::format("{}", static_cast<int64_t>(value));
    }
    return fmt::format("{}", value);  // shortest text that reads back exactly
}

namespace {

// Backslashes and newlines escaped, and double quotes when `quotes`.
std::string escape(std::string_view text, bool quotes) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\' || (quotes && c == '"')) {
            out.push_back('\\');
            out.push_back(c);
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out.push_back(c);
        }
    }
    return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
    return escape(value, true);
}

std::string escape_help(std::string_view help) {
    return escape(help, false);
}

void TextWriter::family(const Family& family) {
    auto it = index_.find(family.name);
    if (it != index_.end()) {
        Block& block = blocks_[it->second];
        if (block.family.type != family.type || block.family.labels != family.labels) {
            throw std::logic_error(fmt::format(
                "metric family {} selected again with another type or labels", family.name));
        }
        selected_ = it->second;
        return;
    }
    Block block{family, fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name,
                                    escape_help(family.help), family.name, to_string(family.type))};
    selected_ = blocks_.size();
    index_.emplace(family.name, blocks_.size());
    blocks_.push_back(std::move(block));
}

TextWriter::Block& TextWriter::current(Type expected_kind, size_t values) {
    if (!selected_) throw std::logic_error("metric sample written before its family");
    Block& block = blocks_[*selected_];
    const Family& family = block.family;
    const bool histogram = family.type == Type::kHistogram;
    if (histogram != (expected_kind == Type::kHistogram)) {
        throw std::logic_error(fmt::format("metric family {} is a {}: wrong kind of sample",
                                           family.name, to_string(family.type)));
    }
    if (values != family.labels.size()) {
        throw std::logic_error(fmt::format("metric family {} has {} labels, sample gave {}",
                                           family.name, family.labels.size(), values));
    }
    return block;
}

void TextWriter::append_series(Block& block, std::string_view suffix, const LabelValues& values,
                               std::string_view extra_label, std::string_view extra_value,
                               std::string_view value) {
    std::string& out = block.lines;
    out += block.family.name;
    out += suffix;
    if (!values.empty() || !extra_label.empty()) {
        out.push_back('{');
        bool first = true;
        for (size_t i = 0; i < values.size(); ++i) {
            if (!first) out.push_back(',');
            first = false;
            out += block.family.labels[i];
            out += "=\"";
            out += escape_label_value(values[i]);
            out.push_back('"');
        }
        if (!extra_label.empty()) {
            if (!first) out.push_back(',');
            out += extra_label;
            out += "=\"";
            out += extra_value;
            out.push_back('"');
        }
        out.push_back('}');
    }
    out.push_back(' ');
    out += value;
    out.push_back('\n');
}

void TextWriter::sample(const LabelValues& values, double value) {
    Block& block = current(Type::kGauge, values.size());
    append_series(block, "", values, "", "", format_value(value));
}

void TextWriter::sample(const LabelValues& values, uint64_t value) {
    Block& block = current(Type::kGauge, values.size());
    append_series(block, "", values, "", "", std::to_string(value));
}

void TextWriter::histogram(const LabelValues& values, const HistogramData& data) {
    Block& block = current(Type::kHistogram, values.size());
    if (data.bucket_counts.size() != data.bounds.size() + 1) {
        throw std::logic_error(
            fmt::format("histogram {}: bucket counts do not match", block.family.name));
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < data.bounds.size(); ++i) {
        cumulative += data.bucket_counts[i];
        append_series(block, "_bucket", values, "le", format_value(data.bounds[i]),
                      std::to_string(cumulative));
    }
    cumulative += data.bucket_counts.back();
    append_series(block, "_bucket", values, "le", "+Inf", std::to_string(cumulative));
    append_series(block, "_sum", values, "", "", format_value(data.sum));
    append_series(block, "_count", values, "", "", std::to_string(cumulative));
}

std::string TextWriter::text() const {
    std::string out;
    for (const auto& block : blocks_) out += block.lines;
    return out;
}

void Counter::write(TextWriter& writer, const LabelValues& values) const {
    writer.sample(values, value());
}

void Gauge::write(TextWriter& writer, const LabelValues& values) const {
    writer.sample(values, value());
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    // The first bucket whose upper bound is >= value ("le" is inclusive).
    const auto bucket = static_cast<size_t>(
        std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
    std::lock_guard lock(mutex_);
    ++counts_[bucket];
    sum_ += value;
}

uint64_t Histogram::count() const {
    std::lock_guard lock(mutex_);
    uint64_t total = 0;
    for (uint64_t count : counts_) total += count;
    return total;
}

void Histogram::write(TextWriter& writer, const LabelValues& values) const {
    std::vector<uint64_t> counts;
    double sum = 0;
    {
        std::lock_guard lock(mutex_);
        counts = counts_;
        sum = sum_;
    }
    writer.histogram(values, HistogramData{bounds_, counts, sum});
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
    std::vector<double> bounds;
    double bound = start;
    for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
    return bounds;
}

std::vector<double> linear_buckets(double start, double width, int count) {
    std::vector<double> bounds;
    for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
    return bounds;
}

}  // namespace sb::metrics
