#include "rules/iptables/route_localnet.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/file_text.h"

namespace sb::rules::iptables {

namespace {

constexpr const char* kRouteLocalnetPath = "/proc/sys/net/ipv4/conf/all/route_localnet";

class KernelRouteLocalnet final : public RouteLocalnet {
  public:
    Result<bool> enable() override {
        // A value that cannot be read is written anyway (the write says
        // whether the setting exists).
        if (auto current = read_file_text(kRouteLocalnetPath); current && *current == "1\n") {
            return false;
        }
        const int fd = ::open(kRouteLocalnetPath, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            return make_error(ErrorCode::kKernel, std::string("open ") + kRouteLocalnetPath, errno);
        }
        int error = write_whole(fd, "1");
        if (::close(fd) != 0 && error == 0) error = errno;
        if (error != 0) {
            return make_error(ErrorCode::kKernel, std::string("write 1 to ") + kRouteLocalnetPath,
                              error);
        }
        return true;
    }
};

}  // namespace

std::unique_ptr<RouteLocalnet> make_kernel_route_localnet() {
    return std::make_unique<KernelRouteLocalnet>();
}

}  // namespace sb::rules::iptables
