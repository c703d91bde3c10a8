#include "proxy/http/routing.h"

#include <exception>
#include <string>
#include <string_view>

#include "base/log.h"

namespace sb::proxy {

namespace {

namespace http = boost::beast::http;

HttpResponse call_handler(const HttpRoutes& routes, std::string_view path) {
    auto it = routes.find(std::string(path));
    if (it == routes.end()) it = routes.find("*");
    if (it == routes.end())
        return HttpResponse{404, "text/plain; charset=utf-8", "not found\n", {}};
    try {
        return it->second();
    } catch (const std::exception& error) {
        log::error("HTTP handler for {} failed: {}", path, error.what());
    } catch (...) {
        log::error("HTTP handler for {} failed", path);
    }
    return HttpResponse{500, "text/plain; charset=utf-8", "internal error\n", {}};
}

}  // namespace

HttpReply route_request(const HttpRoutes& routes, const HttpRequest& request) {
    HttpReply response;
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    response.set("X-Content-Type-Options", "nosniff");
    const bool head = request.method() == http::verb::head;
    HttpResponse answer;
    if (request.method() != http::verb::get && !head) {
        answer = HttpResponse{405, "text/plain; charset=utf-8", "method not allowed\n", {}};
        response.set(http::field::allow, "GET, HEAD");
    } else {
        std::string_view target(request.target().data(), request.target().size());
        answer = call_handler(routes, target.substr(0, target.find('?')));
    }
    response.result(answer.status);
    response.set(http::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response.set(name, value);
    response.content_length(answer.body.size());
    if (!head) response.body() = std::move(answer.body);
    return response;
}

}  // namespace sb::proxy
