#include "rules/nftables/netlink_batch.h"

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <vector>

#include "rules/nftables/netlink_encoding.h"
#include "rules/nftables/netlink_expr.h"

namespace sb::rules::nftables {

namespace {

constexpr uint32_t kElementsPerMessage = 256;  // keeps a message's nested attribute < 64 KiB

// `type`: NFT_MSG_NEWTABLE (created when missing) or NFT_MSG_DELTABLE.
void put_table(NftBatch& b, const char* table, uint16_t type = NFT_MSG_NEWTABLE) {
    nftnl_table* t = nftnl_table_alloc();
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
    nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
    nftnl_table_nlmsg_build_payload(
        b.header(type, NFPROTO_INET, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0), t);
    nftnl_table_free(t);
    b.commit();
}

void put_chain(NftBatch& b, uint16_t type, const std::string& name, const Hook* hook,
               const char* table) {
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name.c_str());
    if (hook) {
        nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook_number(hook->hook));
        nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, hook->priority);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, hook->type.c_str());
        nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    }
    nftnl_chain_nlmsg_build_payload(
        b.header(type, NFPROTO_INET, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0), c);
    nftnl_chain_free(c);
    b.commit();
}

void put_flush(NftBatch& b, const char* table, const std::string& chain) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nftnl_rule_nlmsg_build_payload(b.header(NFT_MSG_DELRULE, NFPROTO_INET, 0), r);
    nftnl_rule_free(r);
    b.commit();
}

// DELSETELEM without an element list flushes the set.
void put_set_flush(NftBatch& b, const char* table, const std::string& set) {
    nlmsghdr* nlh = b.header(NFT_MSG_DELSETELEM, NFPROTO_INET, 0);
    mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, table);
    mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_SET, set.c_str());
    b.commit();
}

void put_rule(NftBatch& b, const char* table, const std::string& chain, const Rule& rule) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
    add_expressions(r, rule);
    nftnl_rule_nlmsg_build_payload(
        b.header(NFT_MSG_NEWRULE, NFPROTO_INET, NLM_F_CREATE | NLM_F_APPEND), r);
    nftnl_rule_free(r);
    b.commit();
}

void put_set(NftBatch& b, const char* table, uint16_t type, const Set& set, uint32_t id) {
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
    nftnl_set_set_str(s, NFTNL_SET_NAME, set.name.c_str());
    nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
    if (type == NFT_MSG_NEWSET) {
        const SetShape shape = shape_of(set.layout, set.family);
        nftnl_set_set_u32(s, NFTNL_SET_FLAGS, shape.flags);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, shape.key_type);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, shape.key_len);
        if (shape.flags & NFT_SET_MAP) {
            nftnl_set_set_u32(s, NFTNL_SET_DATA_TYPE, shape.data_type);
            nftnl_set_set_u32(s, NFTNL_SET_DATA_LEN, shape.data_len);
        }
        nftnl_set_set_u32(s, NFTNL_SET_ID, id);
        const std::vector<uint8_t> udata = set_userdata(set.layout, set.family);
        if (!udata.empty()) {
            nftnl_set_set_data(s, NFTNL_SET_USERDATA, udata.data(),
                               static_cast<uint32_t>(udata.size()));
        }
    }
    nftnl_set_nlmsg_build_payload(
        b.header(type, NFPROTO_INET, type == NFT_MSG_NEWSET ? NLM_F_CREATE : 0), s);
    nftnl_set_free(s);
    b.commit();
}

// An element's value as NEWSETELEM carries it: the endpoint of the backend
// maps, the verdict of the verdict maps; plain sets have none.
void put_value(nftnl_set_elem* e, SetLayout layout, const Verdict& value) {
    if (layout == SetLayout::kBackendsByAddress || layout == SetLayout::kBackendsByPort) {
        const std::vector<uint8_t> data = endpoint_bytes(value);
        nftnl_set_elem_set(e, NFTNL_SET_ELEM_DATA, data.data(), static_cast<uint32_t>(data.size()));
    } else if (!is_plain_set(layout)) {
        nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_VERDICT,
                               static_cast<uint32_t>(verdict_code(value.kind)));
        if (!value.chain.empty())
            nftnl_set_elem_set_str(e, NFTNL_SET_ELEM_CHAIN, value.chain.c_str());
    }
}

// The elements [first, last) of one set, several per message; key_of(*it)
// gives an element's key, by value (ElementMap's iterators yield temporaries). NEWSETELEM takes
// each value from `set` (the desired model's; null when it has none).
template <typename It, typename KeyOf>
void put_set_elements(NftBatch& b, const char* table, uint16_t type, const std::string& set_name,
                      const Set* set, It first, It last, KeyOf key_of) {
    const SetLayout layout = set ? set->layout : SetLayout::kAddrAddr;
    while (first != last) {
        nftnl_set* s = nftnl_set_alloc();
        nftnl_set_set_str(s, NFTNL_SET_TABLE, table);
        nftnl_set_set_str(s, NFTNL_SET_NAME, set_name.c_str());
        for (uint32_t count = 0; first != last && count < kElementsPerMessage; ++first, ++count) {
            const ElementKey element = key_of(*first);
            nftnl_set_elem* e = nftnl_set_elem_alloc();
            const std::vector<uint8_t> key = key_bytes(layout, element);
            nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key.data(),
                               static_cast<uint32_t>(key.size()));
            if (type == NFT_MSG_NEWSETELEM && set) {
                const auto v = set->elements.find(element);
                if (v != set->elements.end()) put_value(e, layout, v->second);
            }
            nftnl_set_elem_add(s, e);
        }
        nftnl_set_elems_nlmsg_build_payload(
            b.header(type, NFPROTO_INET, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0), s);
        nftnl_set_free(s);
        b.commit();
    }
}

// Listed elements, grouped per run of the same set.
void put_elements(NftBatch& b, uint16_t type, const std::vector<ElementId>& ids,
                  const Model& model) {
    auto first = ids.begin();
    while (first != ids.end()) {
        const std::string& set_name = first->first;
        auto last = std::find_if(first, ids.end(),
                                 [&](const ElementId& id) { return id.first != set_name; });
        auto set_it = model.sets.find(set_name);
        put_set_elements(b, model.table.c_str(), type, set_name,
                         set_it == model.sets.end() ? nullptr : &set_it->second, first, last,
                         [](const ElementId& id) -> ElementKey { return id.second; });
        first = last;
    }
}

// Every element of the named sets of `model`.
void put_filled_sets(NftBatch& b, const std::vector<std::string>& names, const Model& model) {
    for (const std::string& name : names) {
        auto it = model.sets.find(name);
        if (it == model.sets.end()) continue;
        const Set& set = it->second;
        put_set_elements(b, model.table.c_str(), NFT_MSG_NEWSETELEM, name, &set,
                         set.elements.begin(), set.elements.end(),
                         [](const auto& element) -> ElementKey { return element.first; });
    }
}

}  // namespace

void write_delta(NftBatch& b, const Delta& delta, const Model& desired) {
    const char* table = desired.table.c_str();
    put_table(b, table);
    for (const std::string& c : delta.flush_chains) put_flush(b, table, c);
    for (const std::string& s : delta.flush_sets) put_set_flush(b, table, s);
    put_elements(b, NFT_MSG_DELSETELEM, delta.del_elements, desired);
    for (const std::string& c : delta.del_chains) put_chain(b, NFT_MSG_DELCHAIN, c, nullptr, table);
    for (const std::string& s : delta.del_sets) {
        Set set;
        set.name = s;
        put_set(b, table, NFT_MSG_DELSET, set, 0);
    }
    uint32_t set_id = 1;
    for (const std::string& s : delta.add_sets) {
        auto it = desired.sets.find(s);
        if (it != desired.sets.end()) put_set(b, table, NFT_MSG_NEWSET, it->second, set_id++);
    }
    for (const std::string& c : delta.add_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        put_chain(b, NFT_MSG_NEWCHAIN, c, it->second.hook ? &*it->second.hook : nullptr, table);
    }
    for (const std::string& c : delta.fill_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        for (const Rule& r : it->second.rules) put_rule(b, table, c, r);
    }
    put_filled_sets(b, delta.fill_sets, desired);
    put_elements(b, NFT_MSG_NEWSETELEM, delta.add_elements, desired);
}

void write_replacement(NftBatch& b, const std::string& table, const Model& model) {
    // Created first so that the delete never fails on a missing table.
    put_table(b, table.c_str());
    put_table(b, table.c_str(), NFT_MSG_DELTABLE);
    put_table(b, table.c_str());
    for (const auto& [name, chain] : model.chains) {
        put_chain(b, NFT_MSG_NEWCHAIN, name, chain.hook ? &*chain.hook : nullptr, table.c_str());
    }
    for (const auto& [name, chain] : model.chains) {
        for (const Rule& r : chain.rules) put_rule(b, table.c_str(), name, r);
    }
}

void write_table_deletion(NftBatch& b, const std::string& table) {
    put_table(b, table.c_str(), NFT_MSG_DELTABLE);
}

}  // namespace sb::rules::nftables
