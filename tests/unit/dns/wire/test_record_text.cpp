// Records in presentation form (dns/wire/record_text.h).
#include <catch.hpp>

#include "dns/wire/record_text.h"

using namespace sb;
using namespace sb::dns;

namespace {

Record record(uint16_t rtype, std::string rdata) {
    return Record{*name_from_text("web.a.svc.cluster.local"), rtype, kClassIN, 30,
                  std::move(rdata)};
}

}  // namespace

TEST_CASE("record text: addresses, names and SRV") {
    CHECK(record_text(record(type::kA, rdata_address(*IpAddress::parse("10.96.0.21")))) ==
          "web.a.svc.cluster.local. 30 IN A 10.96.0.21");
    CHECK(rdata_text(record(type::kAAAA, rdata_address(*IpAddress::parse("fd00::21")))) ==
          "fd00::21");
    CHECK(rdata_text(record(type::kCNAME, *name_from_text("www.example.com"))) ==
          "www.example.com.");
    CHECK(rdata_text(record(type::kSRV, rdata_srv(0, 100, 80, *name_from_text("web.a.svc")))) ==
          "0 100 80 web.a.svc.");
}

TEST_CASE("record text: other types and bad data in RFC 3597 form") {
    CHECK(rdata_text(record(type::kTXT, std::string("\x02hi", 3))) == "\\# 3 026869");
    CHECK(rdata_text(record(type::kA, "abc")) == "\\# 3 616263");
    CHECK(rdata_text(record(type::kCNAME, std::string("\x03www", 4))) == "\\# 4 03777777");
    CHECK(rdata_text(record(type::kSRV, "")) == "\\# 0");
}
