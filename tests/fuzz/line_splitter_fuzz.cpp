// libFuzzer target: the watch stream's line splitter
// (watch/kube/line_splitter.h) over a stream cut into chunks at points the
// fuzzer chooses, with a line limit it chooses (so that the oversized path is
// reached with short inputs). Invariants checked: the lines, the count of
// oversized lines and the bytes left buffered are those of the contract
// computed over the whole stream at once, however the stream was cut.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "watch/kube/line_splitter.h"

namespace {

using sb::watch::kube::LineSplitter;

constexpr size_t kMaxCuts = 64;

struct Split {
    std::vector<std::string> lines;
    size_t oversized = 0;
    size_t buffered = 0;
};

// The header's contract, read off the whole stream: a line (the bytes before
// a '\n') longer than max_line is dropped and counted; otherwise its trailing
// '\r' goes and a blank result is skipped. An unterminated tail stays
// buffered, or is counted as oversized once it outgrows max_line.
Split expected(std::string_view stream, size_t max_line) {
    Split out;
    while (true) {
        size_t newline = stream.find('\n');
        std::string_view line = stream.substr(0, newline);
        if (line.size() > max_line) {
            ++out.oversized;
        } else if (newline == std::string_view::npos) {
            out.buffered = line.size();
        } else {
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (!line.empty()) out.lines.emplace_back(line);
        }
        if (newline == std::string_view::npos) return out;
        stream.remove_prefix(newline + 1);
    }
}

Split feed(std::string_view stream, std::vector<size_t> cuts, size_t max_line) {
    Split out;
    LineSplitter splitter(max_line);
    auto on_line = [&](std::string_view line) { out.lines.emplace_back(line); };
    size_t start = 0;
    cuts.push_back(stream.size());
    for (size_t cut : cuts) {
        splitter.feed(stream.substr(start, cut - start), on_line);
        start = cut;
    }
    out.oversized = splitter.oversized();
    out.buffered = splitter.buffered();
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider provider(data, size);
    const size_t max_line = provider.ConsumeIntegralInRange<size_t>(1, 4096);
    std::vector<uint32_t> cut_seeds(provider.ConsumeIntegralInRange<size_t>(0, kMaxCuts));
    for (auto& seed : cut_seeds) seed = provider.ConsumeIntegral<uint32_t>();
    const std::string stream = provider.ConsumeRemainingBytesAsString();

    std::vector<size_t> cuts;
    for (uint32_t seed : cut_seeds) cuts.push_back(seed % (stream.size() + 1));
    std::sort(cuts.begin(), cuts.end());

    const Split want = expected(stream, max_line);
    for (const Split& got : {feed(stream, {}, max_line), feed(stream, cuts, max_line)}) {
        FUZZ_REQUIRE(got.lines == want.lines);
        FUZZ_REQUIRE(got.oversized == want.oversized);
        FUZZ_REQUIRE(got.buffered == want.buffered);
    }
    return 0;
}
