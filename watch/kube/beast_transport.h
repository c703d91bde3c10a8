// ApiTransport over HTTPS with Boost.Beast: one TLS connection, opened on the
// first request and kept alive for the pages and the watch that follow; the
// server certificate verified against the credentials' CA (or the system's)
// and the server's name; the bearer token re-read for every request.
//
// Thread safety: as ApiTransport (one loop, one request at a time). The
// transport must be destroyed before its io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>

#include "base/result.h"
#include "watch/kube/api_transport.h"
#include "watch/kube/credentials.h"

namespace sb::watch::kube {

// The TLS settings every connection shares, from the credentials: TLS 1.2 at
// least, the CA (else the system trust store) unless verification is off,
// the client certificate. A bad PEM is an error naming the credentials'
// origin (a configuration error: the daemon exits 2).
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const Credentials& credentials);

// `credentials` and `tls` must outlive the transport. `request_timeout`
// bounds connecting, the TLS handshake, sending a request and reading one
// LIST page; a watch (header and body) is bounded by open_watch's deadline.
std::unique_ptr<ApiTransport> make_beast_transport(boost::asio::io_context& io,
                                                   const Credentials& credentials,
                                                   boost::asio::ssl::context& tls,
                                                   std::chrono::seconds request_timeout);

}  // namespace sb::watch::kube
