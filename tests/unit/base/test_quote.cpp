// quote_for_message: the value inside a one-line error.
#include <catch.hpp>

#include "base/quote.h"

using sb::quote_for_message;

TEST_CASE("a quoted value stays on one line and within 200 bytes") {
    CHECK(quote_for_message("web") == "\"web\"");
    CHECK(quote_for_message("a\nb\rc\td") == "\"a?b?c?d\"");
    CHECK(quote_for_message(std::string("x\0y", 3)) == "\"x?y\"");
    CHECK(quote_for_message("\x7f") == "\"?\"");
    CHECK(quote_for_message("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 is kept
    const std::string long_value(500, 'a');
    CHECK(quote_for_message(long_value) == "\"" + std::string(200, 'a') + "\"");
}
