// What a handler of the daemon's HTTP servers answers, and the table of
// paths to handlers: the vocabulary the server, its sessions, the router and
// every caller that registers routes share (no Beast types: cheap to include).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sb::proxy {

struct HttpResponse {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// One route's handler; routes match the request path exactly (the query
// string is ignored). A route "*" answers every path no other route matches.
using HttpHandler = std::function<HttpResponse()>;
using HttpRoutes = std::map<std::string, HttpHandler>;

}  // namespace sb::proxy
