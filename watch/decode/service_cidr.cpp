// Decoding a ServiceCIDR (docs/decoding.md, "ServiceCIDR").
#include "watch/decode/decoder.h"

#include <fmt/format.h>

namespace sb::watch::decoding {

// spec.cidrs as the API server validates it (ValidateServiceCIDR): required,
// one or two items, each a CIDR in canonical form (host bits zero), at most
// one per family. A ServiceCIDR that breaks these is skipped whole: its
// ranges are what traffic is dropped for.
bool Decoder::decode(const Value& value, ServiceCIDR& out) {
    if (!decode_meta(value, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;
    const Value* spec = nullptr;
    if (!get_object(value, root, "spec", spec)) return false;
    if (!spec) return fail(root.child("spec"), "required field is missing");
    const Path spec_path = root.child("spec");
    const Value* cidrs = nullptr;
    if (!get_array(*spec, spec_path, "cidrs", cidrs, 2)) return false;
    if (!cidrs || cidrs->Empty())
        return fail(spec_path.child("cidrs"), "required field is missing");
    const Path here = spec_path.child("cidrs");
    for (rapidjson::SizeType i = 0; i < cidrs->Size(); ++i) {
        const Value& item = (*cidrs)[i];
        if (!item.IsString()) return type_error(here.at(i), "a string", item);
        const std::string_view text = view(item);
        auto prefix = Prefix::parse(text);
        if (!prefix) return fail(here.at(i), prefix.error().message);
        // The address in the strict form the other kinds' addresses take.
        if (!parse_ip(text.substr(0, text.find('/')))) {
            return fail(here.at(i), fmt::format("invalid CIDR {}: invalid address", quoted(text)));
        }
        for (const Prefix& other : out.cidrs) {
            if (other.family() == prefix->family()) {
                return fail(here.at(i), fmt::format("a second {} CIDR {}: at most one per family",
                                                    prefix->family(), quoted(text)));
            }
        }
        out.cidrs.push_back(*prefix);
    }
    return true;
}

}  // namespace sb::watch::decoding
