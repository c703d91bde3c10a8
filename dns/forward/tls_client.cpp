#include "dns/forward/tls_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <span>

#include "dns/forward/upstream_connection.h"
#include "dns/forward/upstream_exchange.h"

namespace sb::dns {

namespace {

// The oldest queued OpenSSL error as text, the queue emptied.
std::string openssl_error() {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return "unknown TLS error";
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    return text;
}

Error tls_error(std::string why) {
    return make_error(ErrorCode::kUnavailable, std::move(why));
}

// The file opens for reading: OpenSSL's own messages do not say which file
// of the three failed.
Status readable(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "r");
    if (file == nullptr) {
        return make_error(ErrorCode::kInvalidArgument, fmt::format("cannot read {}", path), errno);
    }
    std::fclose(file);
    return {};
}

Status load_files(SSL_CTX* context, const TlsFiles& files) {
    auto refused = [](const std::string& what) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{}: {}", what, openssl_error()));
    };
    if (files.ca.empty()) {
        if (SSL_CTX_set_default_verify_paths(context) != 1) return refused("system CAs");
    } else {
        if (auto s = readable(files.ca); !s) return s;
        if (SSL_CTX_load_verify_locations(context, files.ca.c_str(), nullptr) != 1) {
            return refused(fmt::format("could not read root certs from {}", files.ca));
        }
    }
    if (files.cert.empty()) return {};
    for (const std::string* path : {&files.cert, &files.key}) {
        if (auto s = readable(*path); !s) return s;
    }
    if (SSL_CTX_use_certificate_chain_file(context, files.cert.c_str()) != 1) {
        return refused(fmt::format("could not load TLS cert {}", files.cert));
    }
    if (SSL_CTX_use_PrivateKey_file(context, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
        return refused(fmt::format("could not load TLS key {}", files.key));
    }
    if (SSL_CTX_check_private_key(context) != 1) {
        return refused(fmt::format("TLS key {} does not match cert {}", files.key, files.cert));
    }
    return {};
}

// Runs `call` (an SSL_* I/O function) until it returns > 0, waiting on the
// socket for what OpenSSL asks for; an error when the deadline passes or
// the call fails.
template <typename Call>
Result<int> drive(SSL* ssl, const UpstreamConnection& connection, const char* step, Call call) {
    while (true) {
        ERR_clear_error();
        int n = call();
        if (n > 0) return n;
        int error = SSL_get_error(ssl, n);
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
            if (!connection.wait(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT)) {
                return tls_error(fmt::format("TLS {} timeout", step));
            }
            continue;
        }
        long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK) {
            return tls_error(fmt::format("TLS {}: certificate verification failed: {}", step,
                                         X509_verify_cert_error_string(verify)));
        }
        if (error == SSL_ERROR_ZERO_RETURN) return tls_error(fmt::format("TLS {}: closed", step));
        return tls_error(fmt::format("TLS {}: {}", step, openssl_error()));
    }
}

// What the upstream's certificate must name: `server_name` (a host name,
// or an IP address checked as one), else the upstream's address.
Status expect_name(SSL* ssl, const std::string& server_name, const HostPort& upstream) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const std::string ip = server_name.empty() ? upstream.address.to_string() : server_name;
    if (server_name.empty() || IpAddress::parse(server_name)) {
        if (X509_VERIFY_PARAM_set1_ip_asc(param, ip.c_str()) != 1) {
            return tls_error(fmt::format("TLS: cannot verify the address {}", ip));
        }
        return {};
    }
    if (SSL_set_tlsext_host_name(ssl, server_name.c_str()) != 1 ||
        X509_VERIFY_PARAM_set1_host(param, server_name.c_str(), server_name.size()) != 1) {
        return tls_error(fmt::format("TLS: cannot verify the name {}", server_name));
    }
    return {};
}

}  // namespace

Result<std::shared_ptr<const TlsClient>> TlsClient::load(const TlsFiles& files,
                                                         std::string server_name) {
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    if (context == nullptr) return tls_error("TLS: " + openssl_error());
    // Owned from here on, whatever fails below.
    std::shared_ptr<const TlsClient> client(new TlsClient(context, std::move(server_name)));
    // CoreDNS's pkg/tls defaults: TLS 1.2 to 1.3; for 1.2 ECDHE with AEAD only.
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(context, "ECDHE+AESGCM:ECDHE+CHACHA20");
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
    if (auto s = load_files(context, files); !s) return s.error();
    return client;
}

TlsClient::~TlsClient() {
    SSL_CTX_free(context_);
}

Result<Message> TlsClient::exchange(const HostPort& upstream, std::string_view server_name,
                                    const std::string& packet, std::chrono::milliseconds timeout,
                                    const std::optional<IpAddress>& source) const {
    UpstreamConnection connection(upstream, SOCK_STREAM, timeout, source);
    if (auto status = connection.opened(); !status) return status.error();
    if (auto status = connection.connected(); !status) return status.error();
    std::unique_ptr<SSL, decltype(&SSL_free)> owned(SSL_new(context_), &SSL_free);
    SSL* ssl = owned.get();
    if (ssl == nullptr || SSL_set_fd(ssl, connection.fd()) != 1) {
        return tls_error("TLS: " + openssl_error());
    }
    if (auto status = expect_name(ssl, std::string(server_name), upstream); !status) {
        return status.error();
    }
    if (auto shaken = drive(ssl, connection, "handshake", [&] { return SSL_connect(ssl); });
        !shaken) {
        return shaken.error();
    }
    const std::string framed = tcp_framed(packet);
    // Without partial writes SSL_write returns only once all of it is sent.
    if (auto sent =
            drive(ssl, connection, "write",
                  [&] { return SSL_write(ssl, framed.data(), static_cast<int>(framed.size())); });
        !sent) {
        return sent.error();
    }
    std::string in;
    size_t want = 2;
    while (in.size() < want) {
        char buffer[4096];
        const int room = static_cast<int>(std::min(sizeof(buffer), want - in.size()));
        auto n = drive(ssl, connection, "read", [&] { return SSL_read(ssl, buffer, room); });
        if (!n) return n.error();
        in.append(buffer, static_cast<size_t>(*n));
        if (want == 2 && in.size() == 2) {
            want = 2 + ((static_cast<uint8_t>(in[0]) << 8) | static_cast<uint8_t>(in[1]));
        }
    }
    return parse_message(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.data()) + 2, in.size() - 2));
}

}  // namespace sb::dns
