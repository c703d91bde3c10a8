// A blocking HTTP/1.1 client over IPv4 loopback for the proxy's unit tests:
// one request per connection, a 10 s receive timeout so that a hung server
// fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <cstdint>
#include <string>

namespace sb::proxy::test {

// One request over a fresh connection; returns the raw response ("" when
// the connection failed).
inline std::string http_request(uint16_t port, const std::string& request,
                                const char* ip = "127.0.0.1") {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    timeval timeout{10, 0};  // a hung server fails the test instead of hanging it
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    REQUIRE(inet_pton(AF_INET, ip, &address.sin_addr) == 1);
    std::string response;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
        REQUIRE(write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
        char buffer[4096];
        ssize_t n = 0;
        while ((n = read(fd, buffer, sizeof(buffer))) > 0)
            response.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    return response;
}

inline std::string get(uint16_t port, const std::string& path, const char* ip = "127.0.0.1") {
    return http_request(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        ip);
}

inline std::string status_line(const std::string& response) {
    return response.substr(0, response.find("\r\n"));
}

inline std::string body(const std::string& response) {
    auto split = response.find("\r\n\r\n");
    return split == std::string::npos ? "" : response.substr(split + 4);
}

}  // namespace sb::proxy::test
