#include "watch/snapshot.h"

#include <algorithm>

namespace sb::watch {

namespace {

template <typename T>
bool same(const std::shared_ptr<const T>& a, const std::shared_ptr<const T>& b) {
    return a == b || (a && b && *a == *b);
}

// Writes an object outside the Service index (a Node, a Pod, a ServiceCIDR).
template <typename T, typename Map>
bool put_unindexed(Map& objects, std::shared_ptr<const T> object) {
    const ObjectKey key = object->meta.key();
    if (const auto* old = objects.find(key); old && same(*old, object)) return false;
    objects.set(key, std::move(object));
    return true;
}

bool slice_key_less(const std::shared_ptr<const EndpointSlice>& slice, const std::string& name) {
    return slice->meta.name < name;
}

}  // namespace

bool ServiceEntry::operator==(const ServiceEntry& other) const {
    if (!same(service, other.service) || slices.size() != other.slices.size()) return false;
    for (size_t i = 0; i < slices.size(); ++i) {
        if (!same(slices[i], other.slices[i])) return false;
    }
    return true;
}

ObjectKey service_key_of(const EndpointSlice& slice) {
    if (slice.service_name.empty()) return {};
    return {slice.meta.ns, slice.service_name};
}

const ServiceEntry* Snapshot::service(const ObjectKey& key) const {
    const auto* entry = services_.find(key);
    return entry ? entry->get() : nullptr;
}

const Service* Snapshot::find_service(const ObjectKey& key) const {
    const ServiceEntry* entry = service(key);
    return entry ? entry->service.get() : nullptr;
}

const Node* Snapshot::node(const std::string& name) const {
    const auto* node = nodes_.find(ObjectKey{"", name});
    return node ? node->get() : nullptr;
}

template <typename Edit>
void Snapshot::edit_entry(const ObjectKey& key, Edit edit) {
    const auto* found = services_.find(key);
    ServiceEntry entry = found ? **found : ServiceEntry{};
    edit(entry);
    if (!entry.service && entry.slices.empty()) {
        services_.erase(key);
    } else {
        services_.set(key, std::make_shared<const ServiceEntry>(std::move(entry)));
    }
}

bool Snapshot::put(std::shared_ptr<const Service> service, const Touched& touched) {
    const ObjectKey key = service->meta.key();
    const ServiceEntry* entry = this->service(key);
    if (entry && same(entry->service, service)) return false;
    if (!entry || !entry->service) ++service_count_;
    edit_entry(key, [&](ServiceEntry& e) { e.service = std::move(service); });
    touched(key);
    return true;
}

bool Snapshot::erase_service(const ObjectKey& key, const Touched& touched) {
    const ServiceEntry* entry = service(key);
    if (!entry || !entry->service) return false;
    --service_count_;
    edit_entry(key, [](ServiceEntry& e) { e.service.reset(); });
    touched(key);
    return true;
}

bool Snapshot::put(std::shared_ptr<const EndpointSlice> slice, const Touched& touched) {
    const ObjectKey key = slice->meta.key();
    const ObjectKey owner = service_key_of(*slice);
    if (const auto* old = slices_.find(key)) {
        if (same(*old, slice)) return false;
        const ObjectKey old_owner = service_key_of(**old);
        if (old_owner != owner) erase_slice(key, touched);
    }
    slices_.set(key, slice);
    if (!owner.name.empty()) {
        edit_entry(owner, [&](ServiceEntry& e) {
            auto at = std::lower_bound(e.slices.begin(), e.slices.end(), key.name, slice_key_less);
            if (at != e.slices.end() && (*at)->meta.name == key.name) {
                *at = std::move(slice);
            } else {
                e.slices.insert(at, std::move(slice));
            }
        });
    }
    touched(owner);
    return true;
}

bool Snapshot::erase_slice(const ObjectKey& key, const Touched& touched) {
    const auto* old = slices_.find(key);
    if (!old) return false;
    const ObjectKey owner = service_key_of(**old);
    slices_.erase(key);
    if (!owner.name.empty()) {
        edit_entry(owner, [&](ServiceEntry& e) {
            auto at = std::lower_bound(e.slices.begin(), e.slices.end(), key.name, slice_key_less);
            if (at != e.slices.end() && (*at)->meta.name == key.name) e.slices.erase(at);
        });
    }
    touched(owner);
    return true;
}

bool Snapshot::put(std::shared_ptr<const Node> node) {
    return put_unindexed(nodes_, std::move(node));
}

bool Snapshot::put(std::shared_ptr<const Pod> pod) {
    return put_unindexed(pods_, std::move(pod));
}

bool Snapshot::put(std::shared_ptr<const ServiceCIDR> cidr) {
    return put_unindexed(service_cidrs_, std::move(cidr));
}

bool Snapshot::erase_node(const ObjectKey& key) {
    return nodes_.erase(key);
}

bool Snapshot::erase_pod(const ObjectKey& key) {
    return pods_.erase(key);
}

bool Snapshot::erase_service_cidr(const ObjectKey& key) {
    return service_cidrs_.erase(key);
}

bool namespace_in_use(const Snapshot& snapshot, const std::string& ns) {
    auto in = [&](const auto& map) {
        for (const auto& [key, value] : map) {
            if (key.ns == ns) return true;
        }
        return false;
    };
    return in(snapshot.services()) || in(snapshot.endpoint_slices()) || in(snapshot.pods());
}

}  // namespace sb::watch
