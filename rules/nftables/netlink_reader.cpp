#include "rules/nftables/netlink_reader.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "rules/nftables/netlink_encoding.h"

namespace sb::rules::nftables {

namespace {

Chain chain_from(const nftnl_chain* got) {
    Chain chain;
    chain.name = nftnl_chain_get_str(got, NFTNL_CHAIN_NAME);
    if (nftnl_chain_is_set(got, NFTNL_CHAIN_HOOKNUM)) {
        const char* type = nftnl_chain_is_set(got, NFTNL_CHAIN_TYPE)
                               ? nftnl_chain_get_str(got, NFTNL_CHAIN_TYPE)
                               : "filter";
        chain.hook = Hook{type, hook_name(nftnl_chain_get_u32(got, NFTNL_CHAIN_HOOKNUM)),
                          nftnl_chain_get_s32(got, NFTNL_CHAIN_PRIO)};
    }
    return chain;
}

Set set_from(const nftnl_set* got) {
    Set out;
    out.name = nftnl_set_get_str(got, NFTNL_SET_NAME);
    const uint32_t data_type = nftnl_set_is_set(got, NFTNL_SET_DATA_TYPE)
                                   ? nftnl_set_get_u32(got, NFTNL_SET_DATA_TYPE)
                                   : 0;
    const std::optional<SetType> type =
        layout_of(out.name, nftnl_set_get_u32(got, NFTNL_SET_FLAGS),
                  nftnl_set_get_u32(got, NFTNL_SET_KEY_TYPE),
                  nftnl_set_get_u32(got, NFTNL_SET_KEY_LEN), data_type);
    out.unknown = !type;
    if (type) {
        out.layout = type->layout;
        out.family = type->family;
    }
    return out;
}

}  // namespace

Result<std::optional<uint64_t>> table_handle(rules::NetlinkSocket& socket,
                                             const std::string& table) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    nftnl_table* t = nftnl_table_alloc();
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, table.c_str());
    nlmsghdr* nlh =
        nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETTABLE, NFPROTO_INET, 0, socket.next_seq());
    nftnl_table_nlmsg_build_payload(nlh, t);
    nftnl_table_free(t);
    std::optional<uint64_t> handle;
    Status s = socket.query(nlh, "read the table", [&](const nlmsghdr* reply) {
        nftnl_table* got = nftnl_table_alloc();
        if (nftnl_table_nlmsg_parse(reply, got) == 0 &&
            nftnl_table_is_set(got, NFTNL_TABLE_HANDLE)) {
            handle = nftnl_table_get_u64(got, NFTNL_TABLE_HANDLE);
        }
        nftnl_table_free(got);
    });
    if (!s) {
        if (s.error().code == ErrorCode::kNotFound) return std::optional<uint64_t>();
        return s.error();
    }
    if (!handle)
        return make_error(ErrorCode::kKernel, "nftables: the table's answer had no handle");
    return handle;
}

Result<size_t> rule_count(rules::NetlinkSocket& socket, const std::string& table,
                          const std::string& chain) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table.c_str());
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETRULE, NFPROTO_INET, NLM_F_DUMP,
                                          socket.next_seq());
    nftnl_rule_nlmsg_build_payload(nlh, r);
    nftnl_rule_free(r);
    size_t count = 0;
    // The kernel filters the dump by table and chain; the check below keeps
    // a kernel that would not from counting other chains' rules.
    Status s = socket.query(nlh, "list a chain's rules", [&](const nlmsghdr* m) {
        nftnl_rule* got = nftnl_rule_alloc();
        if (nftnl_rule_nlmsg_parse(m, got) == 0 &&
            nftnl_rule_get_str(got, NFTNL_RULE_TABLE) == table &&
            nftnl_rule_get_str(got, NFTNL_RULE_CHAIN) == chain) {
            ++count;
        }
        nftnl_rule_free(got);
    });
    if (!s) return s.error();
    return count;
}

Result<std::optional<Model>> read_table(rules::NetlinkSocket& socket, const std::string& table) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    Model model;
    model.table = table;
    {
        auto handle = table_handle(socket, table);
        if (!handle) return handle.error();
        if (!handle.value()) return std::optional<Model>();
    }
    {
        nftnl_chain* c = nftnl_chain_alloc();
        nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table.c_str());
        nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETCHAIN, NFPROTO_INET,
                                              NLM_F_DUMP, socket.next_seq());
        nftnl_chain_nlmsg_build_payload(nlh, c);
        nftnl_chain_free(c);
        Status s = socket.query(nlh, "list chains", [&](const nlmsghdr* m) {
            nftnl_chain* got = nftnl_chain_alloc();
            if (nftnl_chain_nlmsg_parse(m, got) == 0 &&
                nftnl_chain_get_str(got, NFTNL_CHAIN_TABLE) == table) {
                Chain chain = chain_from(got);
                model.chains[chain.name] = std::move(chain);
            }
            nftnl_chain_free(got);
        });
        if (!s) return s.error();
    }
    {
        nftnl_set* set = nftnl_set_alloc();
        nftnl_set_set_str(set, NFTNL_SET_TABLE, table.c_str());
        nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETSET, NFPROTO_INET, NLM_F_DUMP,
                                              socket.next_seq());
        nftnl_set_nlmsg_build_payload(nlh, set);
        nftnl_set_free(set);
        Status s = socket.query(nlh, "list sets", [&](const nlmsghdr* m) {
            nftnl_set* got = nftnl_set_alloc();
            if (nftnl_set_nlmsg_parse(m, got) == 0) {
                Set out = set_from(got);
                model.sets[out.name] = std::move(out);
            }
            nftnl_set_free(got);
        });
        if (!s) return s.error();
    }
    return std::optional<Model>(std::move(model));
}

Result<ElementMap> dump_elements(rules::NetlinkSocket& socket, const std::string& table,
                                 const Set& set) {
    struct Scan {
        const Set* set;
        ElementMap elements;
    } scan{&set, {}};
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    nftnl_set* req = nftnl_set_alloc();
    nftnl_set_set_str(req, NFTNL_SET_TABLE, table.c_str());
    nftnl_set_set_str(req, NFTNL_SET_NAME, set.name.c_str());
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP,
                                          socket.next_seq());
    nftnl_set_elems_nlmsg_build_payload(nlh, req);
    nftnl_set_free(req);
    const std::string what = fmt::format("list the elements of {}", set.name);
    Status listed = socket.query(nlh, what, [&](const nlmsghdr* m) {
        nftnl_set* got = nftnl_set_alloc();
        if (nftnl_set_elems_nlmsg_parse(m, got) == 0) {
            nftnl_set_elem_foreach(
                got,
                [](nftnl_set_elem* e, void* data) -> int {
                    auto& sc = *static_cast<Scan*>(data);
                    uint32_t key_len = 0;
                    const auto* key = static_cast<const uint8_t*>(
                        nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &key_len));
                    const std::optional<ElementKey> k =
                        key_from_bytes(sc.set->layout, sc.set->family, key, key_len);
                    if (!k) return 0;
                    Verdict value;
                    if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_DATA)) {
                        uint32_t data_len = 0;
                        const auto* d = static_cast<const uint8_t*>(
                            nftnl_set_elem_get(e, NFTNL_SET_ELEM_DATA, &data_len));
                        const std::optional<Verdict> v =
                            endpoint_from_bytes(sc.set->family, d, data_len);
                        if (!v) return 0;
                        value = *v;
                    }
                    sc.elements.insert_or_assign(*k, value);
                    return 0;
                },
                &scan);
        }
        nftnl_set_free(got);
    });
    if (!listed) return listed.error();
    return std::move(scan.elements);
}

}  // namespace sb::rules::nftables
