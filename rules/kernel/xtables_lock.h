// XtablesLock: the lock every legacy x_tables writer takes (iptables -w,
// kubelet, kube-proxy), so that no other writer replaces a table between
// our read and our commit. Shared by the iptables backend and the
// kube-proxy cleanup.
#pragma once

namespace sb::rules {

class XtablesLock {
  public:
    // Takes /run/xtables.lock, waiting at most 5 s (100 tries, 50 ms apart).
    XtablesLock();
    ~XtablesLock();  // releases it
    XtablesLock(const XtablesLock&) = delete;
    XtablesLock& operator=(const XtablesLock&) = delete;
    // Held, or there is no /run (then nobody else can hold it either).
    bool ok() const { return fd_ < 0 || locked_; }

  private:
    int fd_ = -1;
    bool locked_ = false;
};

}  // namespace sb::rules
