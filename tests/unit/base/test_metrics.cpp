// The program's one Prometheus text writer and its metric types.
#include <catch.hpp>

#include <stdexcept>

#include "base/metrics.h"
#include "tests/unit/exposition.h"

using namespace sb::metrics;

TEST_CASE("values print as Prometheus expects") {
    CHECK(format_value(0) == "0");
    CHECK(format_value(42) == "42");
    CHECK(format_value(-3) == "-3");
    CHECK(format_value(0.25) == "0.25");
    CHECK(format_value(1700000000.5) == "1700000000.5");
    CHECK(format_value(18446744073709551615.0) == "1.8446744073709552e+19");
    CHECK(format_value(1.0 / 0.0) == "+Inf");
    CHECK(format_value(-1.0 / 0.0) == "-Inf");
    CHECK(format_value(0.0 / 0.0) == "NaN");
}

TEST_CASE("label values and help texts are escaped per the exposition format") {
    CHECK(escape_label_value(R"(a\b"c)"
                             "\n") == R"(a\\b\"c\n)");
    CHECK(escape_help("one\\two\nthree \"quoted\"") == "one\\\\two\\nthree \"quoted\"");
    TextWriter out;
    out.family({"t_total", "Help with a\nnewline.", Type::kCounter, {"path", "kind"}});
    out.sample({"C:\\dir", "say \"hi\""}, uint64_t{3});
    CHECK(out.text() ==
          "# HELP t_total Help with a\\nnewline.\n"
          "# TYPE t_total counter\n"
          "t_total{path=\"C:\\\\dir\",kind=\"say \\\"hi\\\"\"} 3\n");
    CHECK(sb::testing::parse_exposition(out.text()).problems.empty());
}

TEST_CASE("a family selected twice is one block with one HELP and TYPE") {
    const Family a{"a_total", "A.", Type::kCounter, {"x"}};
    const Family b{"b", "B.", Type::kGauge, {}};
    TextWriter out;
    out.family(a);
    out.sample({"1"}, uint64_t{1});
    out.family(b);
    out.sample({}, 0.5);
    out.family(a);  // another part of the program adds a series
    out.sample({"2"}, uint64_t{2});
    CHECK(out.text() ==
          "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 1\na_total{x=\"2\"} 2\n"
          "# HELP b B.\n# TYPE b gauge\nb 0.5\n");
    auto parsed = sb::testing::parse_exposition(out.text());
    CHECK(parsed.problems.empty());
}

TEST_CASE("contract violations are errors, not bad text") {
    TextWriter out;
    CHECK_THROWS_AS(out.sample({}, 1.0), std::logic_error);  // no family yet
    out.family({"g", "G.", Type::kGauge, {"a"}});
    CHECK_THROWS_AS(out.sample({}, 1.0), std::logic_error);          // a label missing
    CHECK_THROWS_AS(out.sample({"1", "2"}, 1.0), std::logic_error);  // one too many
    CHECK_THROWS_AS(out.family({"g", "G.", Type::kCounter, {"a"}}), std::logic_error);
    CHECK_THROWS_AS(out.family({"g", "G.", Type::kGauge, {"b"}}), std::logic_error);
    const double bounds[] = {1};
    const uint64_t counts[] = {0, 0};
    CHECK_THROWS_AS(out.histogram({"1"}, HistogramData{bounds, counts, 0}), std::logic_error);
    out.family({"h", "H.", Type::kHistogram, {}});
    CHECK_THROWS_AS(out.sample({}, 1.0), std::logic_error);
    const uint64_t short_counts[] = {0};
    CHECK_THROWS_AS(out.histogram({}, HistogramData{bounds, short_counts, 0}), std::logic_error);
}

TEST_CASE("histogram buckets are cumulative with le inclusive, _count is the +Inf bucket") {
    Histogram histogram({0.1, 1, 10});
    histogram.observe(0.05);
    histogram.observe(1);  // on a bound: counted in le="1"
    histogram.observe(5);
    histogram.observe(50);
    CHECK(histogram.count() == 4);
    TextWriter out;
    out.family({"h_seconds", "H.", Type::kHistogram, {"ip_family"}});
    histogram.write(out, {"IPv4"});
    CHECK(out.text() ==
          "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
          "h_seconds_bucket{ip_family=\"IPv4\",le=\"0.1\"} 1\n"
          "h_seconds_bucket{ip_family=\"IPv4\",le=\"1\"} 2\n"
          "h_seconds_bucket{ip_family=\"IPv4\",le=\"10\"} 3\n"
          "h_seconds_bucket{ip_family=\"IPv4\",le=\"+Inf\"} 4\n"
          "h_seconds_sum{ip_family=\"IPv4\"} 56.05\n"
          "h_seconds_count{ip_family=\"IPv4\"} 4\n");
    CHECK(sb::testing::parse_exposition(out.text()).problems.empty());
}

TEST_CASE("bucket layouts") {
    auto exponential = exponential_buckets(0.001, 2, 15);
    REQUIRE(exponential.size() == 15);
    CHECK(exponential.front() == 0.001);
    CHECK(exponential.back() == Approx(16.384));
    CHECK(linear_buckets(60, 5, 12) ==
          std::vector<double>{60, 65, 70, 75, 80, 85, 90, 95, 100, 105, 110, 115});
}

TEST_CASE("a labelled family writes its series sorted by label values") {
    Labelled<Counter> codes({"codes_total", "C.", Type::kCounter, {"code"}});
    codes.with({"503"}).inc();
    codes.with({"200"}).inc(2);
    codes.with({"503"}).inc();
    Labelled<Histogram> durations({"d_seconds", "D.", Type::kHistogram, {"f"}},
                                  std::vector<double>{1});
    durations.with({"x"}).observe(2);
    TextWriter out;
    codes.write(out);
    durations.write(out);
    auto parsed = sb::testing::parse_exposition(out.text());
    CHECK(parsed.problems.empty());
    CHECK(out.text().find("codes_total{code=\"200\"} 2\ncodes_total{code=\"503\"} 2\n") !=
          std::string::npos);
    CHECK(parsed.value("d_seconds_bucket{f=\"x\",le=\"1\"}") == 0);
    CHECK(parsed.value("d_seconds_count{f=\"x\"}") == 1);
}

TEST_CASE("the test reader finds what a broken exposition does wrong") {
    using sb::testing::parse_exposition;
    CHECK_FALSE(parse_exposition("x 1\n").problems.empty());  // no TYPE
    CHECK_FALSE(
        parse_exposition("# HELP x X.\n# TYPE x gauge\n# TYPE x gauge\nx 1\n").problems.empty());
    CHECK_FALSE(parse_exposition("# HELP x X.\n# TYPE x gauge\nx 1\nx 2\n").problems.empty());
    CHECK_FALSE(parse_exposition("# HELP x X.\n# TYPE x gauge\nx 1\n# HELP y Y.\n# TYPE y "
                                 "gauge\ny 1\nx{a=\"b\"} 1\n")
                    .problems.empty());  // x split in two blocks
    CHECK_FALSE(parse_exposition("# HELP x X.\n# TYPE x gauge\nx{a=\"\\q\"} 1\n").problems.empty());
    CHECK(parse_exposition("# HELP x X.\n# TYPE x gauge\nx{a=\"\\\"\"} 1\n").problems.empty());
}
