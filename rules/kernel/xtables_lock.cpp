#include "rules/kernel/xtables_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace sb::rules {

XtablesLock::XtablesLock() {
    fd_ = ::open("/run/xtables.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    for (int attempt = 0; attempt < 100; ++attempt) {
        if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
            locked_ = true;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

XtablesLock::~XtablesLock() {
    if (fd_ >= 0) ::close(fd_);
}

}  // namespace sb::rules
