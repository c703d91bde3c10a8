// Splits a watch stream's body into lines (one JSON event per line), however
// the bytes were cut into chunks and reads: a line may span many chunks, one
// chunk may hold many lines. Not thread-safe (one per stream).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sb::watch::kube {

class LineSplitter {
  public:
    // A line longer than max_line is dropped (counted in oversized()) so that
    // a server that never sends a newline cannot grow memory without bound.
    explicit LineSplitter(size_t max_line = size_t{256} << 20) : max_line_(max_line) {}

    // Calls on_line(std::string_view) for each complete line, without the
    // '\n' (and a '\r' before it); blank lines are skipped.
    template <typename OnLine>
    void feed(std::string_view data, OnLine&& on_line) {
        while (!data.empty()) {
            size_t newline = data.find('\n');
            if (newline == std::string_view::npos) {
                append(data);
                return;
            }
            if (pending_.empty() && !skipping_) {
                // A whole line in one chunk is held to the same limit as one
                // gathered from many, so that chunking never changes the lines.
                std::string_view line = data.substr(0, newline);
                if (line.size() > max_line_) {
                    ++oversized_;
                } else {
                    emit(line, on_line);
                }
            } else {
                append(data.substr(0, newline));
                if (!skipping_) emit(pending_, on_line);
                pending_.clear();
                skipping_ = false;
            }
            data.remove_prefix(newline + 1);
        }
    }

    void reset() {
        pending_.clear();
        skipping_ = false;
    }
    size_t buffered() const { return pending_.size(); }
    size_t oversized() const { return oversized_; }

  private:
    void append(std::string_view data);

    template <typename OnLine>
    static void emit(std::string_view line, OnLine& on_line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.empty()) on_line(line);
    }

    size_t max_line_;
    std::string pending_;
    bool skipping_ = false;  // inside an oversized line: drop until its newline
    size_t oversized_ = 0;
};

}  // namespace sb::watch::kube
