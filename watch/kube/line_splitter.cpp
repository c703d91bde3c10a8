#include "watch/kube/line_splitter.h"

namespace sb::watch::kube {

void LineSplitter::append(std::string_view data) {
    if (skipping_) return;
    if (pending_.size() + data.size() > max_line_) {
        pending_.clear();
        pending_.shrink_to_fit();
        skipping_ = true;
        ++oversized_;
        return;
    }
    pending_.append(data);
}

}  // namespace sb::watch::kube
