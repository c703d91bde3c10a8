// Every Asio/Beast call uses the error_code form (redirect_error), so no
// exception leaves a handler.
#include "watch/kube/beast_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "watch/kube/line_splitter.h"

namespace sb::watch::kube {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Stream = beast::ssl_stream<beast::tcp_stream>;

struct Connection {
    Connection(asio::io_context& io, ssl::context& context) : stream(io, context) {}
    Stream stream;
    beast::flat_buffer buffer;
};

Reply not_sent(std::string reason) {
    Reply reply;
    reply.failure = std::move(reason);
    return reply;
}

Reply no_answer(const error_code& ec) {
    Reply reply;
    reply.sent = true;
    reply.failure = ec.message();
    return reply;
}

class BeastTransport final : public ApiTransport {
  public:
    BeastTransport(asio::io_context& io, const Credentials& credentials, ssl::context& tls,
                   std::chrono::seconds request_timeout)
        : io_(io), credentials_(credentials), tls_(tls), request_timeout_(request_timeout) {}

    awaitable<Reply> get(const std::string& target) override;
    awaitable<Reply> open_watch(const std::string& target, std::chrono::seconds deadline) override;
    awaitable<StreamEnd> read_watch(const WatchLineHandlers& handlers) override;
    void disconnect() override {
        watch_.reset();
        connection_.reset();
    }

  private:
    // Opens connection_ when there is none; the reason when that fails.
    awaitable<std::optional<std::string>> connect();
    // Connects if needed and sends a GET; the reason when that fails.
    awaitable<std::optional<std::string>> send(const std::string& target);

    asio::io_context& io_;
    const Credentials& credentials_;
    ssl::context& tls_;
    std::chrono::seconds request_timeout_;
    std::unique_ptr<Connection> connection_;
    // The watch open_watch() answered 200, until read_watch() ends it.
    std::optional<http::response_parser<http::buffer_body>> watch_;
};

awaitable<std::optional<std::string>> BeastTransport::connect() {
    if (connection_) co_return std::nullopt;
    auto fresh = std::make_unique<Connection>(io_, tls_);
    error_code ec;
    tcp::resolver resolver(io_);
    auto endpoints =
        co_await resolver.async_resolve(credentials_.address.host, credentials_.address.port,
                                        asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return fmt::format("cannot resolve {}: {}", credentials_.address.host, ec.message());
    auto& tcp_stream = beast::get_lowest_layer(fresh->stream);
    tcp_stream.expires_after(request_timeout_);
    co_await tcp_stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return fmt::format("cannot connect: {}", ec.message());

    SSL* ssl_handle = fresh->stream.native_handle();
    const std::string& name = credentials_.tls_server_name.empty() ? credentials_.address.host
                                                                   : credentials_.tls_server_name;
    error_code not_ip;
    asio::ip::make_address(name, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl_handle, name.c_str());
    if (!credentials_.insecure_skip_tls_verify) {
        // The certificate must name the server (DNS or IP SAN), as kubectl checks.
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
        if (not_ip) {
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
        } else {
            X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
        }
    }
    co_await fresh->stream.async_handshake(ssl::stream_base::client,
                                           asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        long verify = SSL_get_verify_result(ssl_handle);
        if (verify != X509_V_OK) {
            co_return fmt::format("TLS certificate of the server rejected: {}",
                                  X509_verify_cert_error_string(verify));
        }
        co_return fmt::format("TLS handshake failed: {}", ec.message());
    }
    connection_ = std::move(fresh);
    co_return std::nullopt;
}

awaitable<std::optional<std::string>> BeastTransport::send(const std::string& target) {
    if (auto failed = co_await connect()) co_return failed;
    http::request<http::empty_body> request{http::verb::get,
                                            credentials_.address.base_path + target, 11};
    request.set(http::field::host, credentials_.address.host_header());
    request.set(http::field::user_agent, "switchboard/0.1");
    request.set(http::field::accept, "application/json");
    // Re-read for every request: a projected service account token rotates.
    auto token = credentials_.bearer_token();
    if (!token) co_return fmt::format("cannot read the token: {}", token.error().describe());
    if (!token->empty()) request.set(http::field::authorization, "Bearer " + *token);
    beast::get_lowest_layer(connection_->stream).expires_after(request_timeout_);
    error_code ec;
    co_await http::async_write(connection_->stream, request,
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return fmt::format("cannot send the request: {}", ec.message());
    co_return std::nullopt;
}

awaitable<Reply> BeastTransport::get(const std::string& target) {
    if (auto failed = co_await send(target)) co_return not_sent(std::move(*failed));
    http::response_parser<http::string_body> parser;
    parser.body_limit(uint64_t{1} << 31);
    error_code ec;
    co_await http::async_read(connection_->stream, connection_->buffer, parser,
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return no_answer(ec);
    auto& response = parser.get();
    Reply reply;
    reply.status = response.result_int();
    reply.retry_after = std::string(response[http::field::retry_after]);
    reply.body = std::move(response.body());
    if (!parser.keep_alive()) connection_.reset();
    co_return reply;
}

awaitable<Reply> BeastTransport::open_watch(const std::string& target,
                                            std::chrono::seconds deadline) {
    watch_.reset();
    if (auto failed = co_await send(target)) co_return not_sent(std::move(*failed));
    beast::get_lowest_layer(connection_->stream).expires_after(deadline);

    error_code ec;
    http::response_parser<http::empty_body> header;
    co_await http::async_read_header(connection_->stream, connection_->buffer, header,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return no_answer(ec);
    Reply reply;
    reply.status = header.get().result_int();
    if (reply.status != 200) {
        http::response_parser<http::string_body> body(std::move(header));
        body.body_limit(1 << 20);
        co_await http::async_read(connection_->stream, connection_->buffer, body,
                                  asio::redirect_error(asio::use_awaitable, ec));
        auto& response = body.get();
        reply.retry_after = std::string(response[http::field::retry_after]);
        if (!ec) reply.body = std::move(response.body());
        co_return reply;
    }
    watch_.emplace(std::move(header));
    watch_->body_limit(std::numeric_limits<uint64_t>::max());
    co_return reply;
}

awaitable<StreamEnd> BeastTransport::read_watch(const WatchLineHandlers& handlers) {
    auto& stream = *watch_;
    LineSplitter splitter;
    bool stop = false;
    std::vector<char> chunk(64 * 1024);
    error_code ec;
    while (!stream.is_done()) {
        stream.get().body().data = chunk.data();
        stream.get().body().size = chunk.size();
        co_await http::async_read_some(connection_->stream, connection_->buffer, stream,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec == http::error::need_buffer) ec = {};
        size_t received = chunk.size() - stream.get().body().size;
        size_t oversized = splitter.oversized();
        splitter.feed(std::string_view(chunk.data(), received), [&](std::string_view line) {
            if (!stop) stop = !handlers.line(line);
        });
        if (splitter.oversized() > oversized) handlers.oversized(splitter.oversized() - oversized);
        if (ec == beast::error::timeout) co_return StreamEnd{StreamEnd::How::kStalled, {}, false};
        if (ec) co_return StreamEnd{StreamEnd::How::kLost, ec.message(), false};
        if (stop) co_return StreamEnd{StreamEnd::How::kStopped, {}, false};
    }
    const bool keep_alive = stream.keep_alive();
    watch_.reset();
    if (!keep_alive) connection_.reset();
    co_return StreamEnd{StreamEnd::How::kEnded, {}, splitter.buffered() > 0};
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> make_tls_context(const Credentials& credentials) {
    auto fail = [&](const std::string& what, const error_code& ec) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{}: {}: {}", credentials.origin, what, ec.message()));
    };
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    error_code ec;
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1,
                         ec);
    if (credentials.insecure_skip_tls_verify) {
        context->set_verify_mode(ssl::verify_none, ec);
    } else {
        context->set_verify_mode(ssl::verify_peer, ec);
        if (credentials.ca_pem.empty()) {
            context->set_default_verify_paths(ec);
        } else {
            context->add_certificate_authority(asio::buffer(credentials.ca_pem), ec);
            if (ec) return fail("bad certificate authority", ec);
        }
    }
    if (!credentials.client_cert_pem.empty()) {
        context->use_certificate_chain(asio::buffer(credentials.client_cert_pem), ec);
        if (ec) return fail("bad client certificate", ec);
        context->use_private_key(asio::buffer(credentials.client_key_pem), ssl::context::pem, ec);
        if (ec) return fail("bad client key", ec);
    }
    return context;
}

std::unique_ptr<ApiTransport> make_beast_transport(asio::io_context& io,
                                                   const Credentials& credentials,
                                                   asio::ssl::context& tls,
                                                   std::chrono::seconds request_timeout) {
    return std::make_unique<BeastTransport>(io, credentials, tls, request_timeout);
}

}  // namespace sb::watch::kube
