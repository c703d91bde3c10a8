// The answer of the daemon's HTTP servers to one parsed request: the route's
// handler for GET and HEAD, 404 for a path no route matches, 405 for other
// methods, 500 when the handler throws. Split from the socket handling in
// proxy/http/session.cpp so that the bytes a client sends can be fuzzed
// without sockets (tests/fuzz/http_request_fuzz.cpp).
//
// Pure apart from the handler it calls; thread-safe when the handler is.
#pragma once

#include <boost/beast/http.hpp>

#include "proxy/http/routes.h"

namespace sb::proxy {

// The daemon's endpoints take no body: a request with one is refused (413)
// before it is routed (proxy/http/session.cpp).
using HttpRequest = boost::beast::http::request<boost::beast::http::empty_body>;
using HttpReply = boost::beast::http::response<boost::beast::http::string_body>;

// The response to `request`, keep-alive and HTTP version as the request asks;
// a HEAD response has the headers (Content-Length included) of the GET one
// and no body. No exception leaves it: a throwing handler is logged and
// answered 500.
HttpReply route_request(const HttpRoutes& routes, const HttpRequest& request);

}  // namespace sb::proxy
