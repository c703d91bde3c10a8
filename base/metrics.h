// Prometheus metrics and the one text writer the whole program exposes them
// with (text exposition format 0.0.4).
//
// A family is what one "# HELP" / "# TYPE" pair announces: a name, a help
// text, a type and its label names. TextWriter collects the samples of every
// family of /metrics and prints each family once, as one block, whichever
// part of the program added samples to it: HELP and TYPE once, label values
// escaped, values formatted the same way everywhere, histograms as
// _bucket{le} / _sum / _count.
//
// The live metric types (Counter, Gauge, Histogram, and Labelled<Metric> for
// a family of series by label values, client_golang's *Vec) may be updated
// from any thread while another thread writes them out. A TextWriter is used
// by one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sb::metrics {

enum class Type : uint8_t { kCounter, kGauge, kHistogram };
const char* to_string(Type type);  // "counter", "gauge", "histogram"

struct Family {
    std::string name;
    std::string help;
    Type type = Type::kGauge;
    // Label names, in the order samples give their values; printed in this
    // order. Never "le" (the writer adds it to histogram buckets).
    std::vector<std::string> labels;
};

using LabelValues = std::vector<std::string>;

// A sample value as Prometheus prints it: integers (below 2^53) without a
// fraction, others in the shortest text that reads back exactly, "+Inf",
// "-Inf" and "NaN" spelled out.
std::string format_value(double value);
// A label value escaped for the text format: \ -> \\, " -> \", newline -> \n.
std::string escape_label_value(std::string_view value);
// A HELP text escaped: \ -> \\, newline -> \n.
std::string escape_help(std::string_view help);

// One histogram series' state.
struct HistogramData {
    std::span<const double> bounds;           // upper bounds, ascending (+Inf implied)
    std::span<const uint64_t> bucket_counts;  // per bucket, NOT cumulative: bounds.size() + 1
    double sum = 0;
};

class TextWriter {
  public:
    // Makes `family` the one the next samples belong to. The first time a
    // name is seen its HELP and TYPE lines are written; selecting it again
    // (from another part of the program) continues the same block. Throws
    // std::logic_error when the type or label names differ from the first
    // selection: a programming error (the HTTP server turns it into a 500).
    void family(const Family& family);
    // A counter or gauge sample; `values` match the family's label names
    // (std::logic_error otherwise, or when no family is selected or it is a
    // histogram).
    void sample(const LabelValues& values, double value);
    void sample(const LabelValues& values, uint64_t value);
    // A histogram series (the family must be a histogram).
    void histogram(const LabelValues& values, const HistogramData& data);

    // The exposition: every family in the order first selected.
    std::string text() const;

  private:
    struct Block {
        Family family;
        std::string lines;
    };
    Block& current(Type expected_kind, size_t values);
    void append_series(Block& block, std::string_view suffix, const LabelValues& values,
                       std::string_view extra_label, std::string_view extra_value,
                       std::string_view value);

    std::vector<Block> blocks_;
    std::map<std::string, size_t, std::less<>> index_;  // family name -> blocks_ position
    std::optional<size_t> selected_;                    // blocks_ position
};

class Counter {
  public:
    void inc(uint64_t amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
    uint64_t value() const { return value_.load(std::memory_order_relaxed); }
    void write(TextWriter& writer, const LabelValues& values) const;

  private:
    std::atomic<uint64_t> value_{0};
};

class Gauge {
  public:
    void set(double value) { value_.store(value, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }
    void write(TextWriter& writer, const LabelValues& values) const;

  private:
    std::atomic<double> value_{0};
};

class Histogram {
  public:
    // `bounds`: the upper bounds of the buckets, ascending (+Inf is implied).
    explicit Histogram(std::vector<double> bounds);

    void observe(double value);  // in the first bucket whose bound is >= value
    uint64_t count() const;
    void write(TextWriter& writer, const LabelValues& values) const;

  private:
    const std::vector<double> bounds_;
    mutable std::mutex mutex_;
    std::vector<uint64_t> counts_;  // per bucket, not cumulative; guarded by mutex_
    double sum_ = 0;                // guarded by mutex_
};

// client_golang's ExponentialBuckets and LinearBuckets.
std::vector<double> exponential_buckets(double start, double factor, int count);
std::vector<double> linear_buckets(double start, double width, int count);

// A labelled family of Metric series, created at their first use.
template <typename Metric>
class Labelled {
  public:
    // `metric_args` construct every series (a Histogram's bounds).
    template <typename... Args>
    explicit Labelled(Family family, Args... metric_args)
        : family_(std::move(family)),
          make_([metric_args...] { return std::make_unique<Metric>(metric_args...); }) {}

    // The series of `values` (one per label name). The reference stays valid
    // as long as this object.
    Metric& with(const LabelValues& values) {
        std::lock_guard lock(mutex_);
        auto& series = series_[values];
        if (!series) series = make_();
        return *series;
    }
    // The family and every series, sorted by label values.
    void write(TextWriter& writer) const {
        writer.family(family_);
        std::lock_guard lock(mutex_);
        for (const auto& [values, series] : series_) series->write(writer, values);
    }
    const Family& family() const { return family_; }

  private:
    const Family family_;
    const std::function<std::unique_ptr<Metric>()> make_;
    mutable std::mutex mutex_;
    std::map<LabelValues, std::unique_ptr<Metric>> series_;  // guarded by mutex_
};

// An unlabelled metric as its own family.
template <typename Metric>
void write_metric(TextWriter& writer, const Family& family, const Metric& metric) {
    writer.family(family);
    metric.write(writer, {});
}

}  // namespace sb::metrics
