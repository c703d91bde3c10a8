// libFuzzer target: the bytes a client sends to the daemon's HTTP servers
// (metrics, healthz, the health-check node ports). The input is one
// connection's bytes, read as the server reads them (Beast's http::read with
// the server's parser, limits and buffer, from an in-memory stream) and
// answered by route_request (proxy/http/routing.h), request after request
// while the client keeps the connection alive.
// Invariants checked: nothing crashes, hangs or reads out of bounds
// (ASan/UBSan); GET and HEAD of a route get its handler's answer, of any
// other path 404 (or the "*" route), other methods 405 with Allow; a
// throwing handler gives 500; a HEAD answer has no body and the GET answer's
// Content-Length; every answer serialises to a response that parses back
// with the same status and body.
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/log.h"
#include "proxy/http/limits.h"
#include "proxy/http/routing.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using namespace sb::proxy;

const std::string kMetricsBody = "switchboard_up 1\n";

HttpRoutes routes(bool catch_all) {
    HttpRoutes table;
    table["/metrics"] = [] { return HttpResponse{200, "text/plain", kMetricsBody, {}}; };
    table["/healthz"] = [] {
        return HttpResponse{
            503, "application/json", "{}", {{"X-Load-Balancing-Endpoint-Weight", "1"}}};
    };
    table["/throws"] = []() -> HttpResponse { throw std::runtime_error("handler failed"); };
    if (catch_all) table["*"] = [] { return HttpResponse{200, "text/plain", "any\n", {}}; };
    return table;
}

// The status and body `request` must get from `table`.
HttpResponse expected(const HttpRoutes& table, const HttpRequest& request) {
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
        return HttpResponse{405, "", "method not allowed\n", {}};
    }
    std::string_view target(request.target().data(), request.target().size());
    std::string path(target.substr(0, target.find('?')));
    if (path == "/throws") return HttpResponse{500, "", "internal error\n", {}};
    auto route = table.find(path);
    if (route == table.end()) route = table.find("*");
    if (route == table.end()) return HttpResponse{404, "", "not found\n", {}};
    return route->second();
}

void check_answer(const HttpRoutes& table, const HttpRequest& request, const HttpReply& reply) {
    const HttpResponse want = expected(table, request);
    const bool head = request.method() == http::verb::head;
    FUZZ_REQUIRE(reply.result_int() == want.status);
    FUZZ_REQUIRE(reply.body() == (head ? "" : want.body));
    FUZZ_REQUIRE(reply[http::field::content_length] == std::to_string(want.body.size()));
    if (want.status == 405) FUZZ_REQUIRE(reply[http::field::allow] == "GET, HEAD");
    FUZZ_REQUIRE(reply.keep_alive() == request.keep_alive());

    std::ostringstream wire;
    wire << reply;
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    parser.skip(head);
    beast::error_code ec;
    const std::string bytes = wire.str();
    parser.put(boost::asio::buffer(bytes), ec);
    FUZZ_REQUIRE(!ec && parser.is_done());
    FUZZ_REQUIRE(parser.get().result_int() == want.status);
    FUZZ_REQUIRE(parser.get().body() == reply.body());
}

void serve(std::string_view bytes, const HttpRoutes& table) {
    boost::asio::io_context io;
    beast::test::stream client(io, beast::string_view(bytes.data(), bytes.size()));
    client.close_remote();
    beast::flat_buffer buffer;
    while (true) {
        // The server's parser and header limit (proxy/http/session.cpp); it
        // answers a refused request with an error status and closes, which
        // route_request has no part in.
        http::request_parser<http::empty_body> parser;
        parser.header_limit(HttpLimits{}.max_header_bytes);
        parser.body_limit(0);
        beast::error_code ec;
        http::read(client, buffer, parser, ec);
        if (ec) return;
        const HttpRequest& request = parser.get();
        HttpReply reply = route_request(table, request);
        check_answer(table, request, reply);
        if (!reply.keep_alive()) return;
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // The throwing handler is logged on every run: keep the fuzzer's output readable.
    spdlog::set_level(spdlog::level::off);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    static const HttpRoutes exact = routes(false);
    static const HttpRoutes catch_all = routes(true);
    serve(bytes, exact);
    serve(bytes, catch_all);
    return 0;
}
