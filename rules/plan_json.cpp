#include "rules/plan_json.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace sb::rules {

namespace {

// A RapidJSON output stream appending to a std::string: the document is
// written once, with no second copy out of a StringBuffer (a 10k-Service
// plan is tens of MiB).
class StringOutput {
  public:
    using Ch = char;
    explicit StringOutput(std::string& out) : out_(out) {}
    void Put(char c) { out_.push_back(c); }
    void Flush() {}

  private:
    std::string& out_;
};

using Writer = rapidjson::PrettyWriter<StringOutput>;

void write_string(Writer& writer, const std::string& text) {
    writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

template <typename T>
void write_texts(Writer& writer, const char* key, const std::vector<T>& values) {
    writer.Key(key);
    writer.StartArray();
    for (const auto& value : values) write_string(writer, value.to_string());
    writer.EndArray();
}

void write_endpoints(Writer& writer, const char* key, const EndpointList& endpoints) {
    writer.Key(key);
    writer.StartArray();
    for (const auto& endpoint : endpoints) {
        writer.StartObject();
        writer.Key("ip");
        write_string(writer, endpoint.ip.to_string());
        writer.Key("port");
        writer.Uint(endpoint.port);
        writer.Key("ready");
        writer.Bool(endpoint.ready);
        writer.Key("serving");
        writer.Bool(endpoint.serving);
        writer.Key("terminating");
        writer.Bool(endpoint.terminating);
        writer.Key("nodeName");
        write_string(writer, endpoint.node_name);
        writer.Key("zone");
        write_string(writer, endpoint.zone);
        writer.EndObject();
    }
    writer.EndArray();
}

void write_service_port(Writer& writer, const ServicePortPlan& service) {
    writer.StartObject();
    writer.Key("namespace");
    write_string(writer, service.ns);
    writer.Key("service");
    write_string(writer, service.service);
    writer.Key("portName");
    write_string(writer, service.port_name);
    writer.Key("protocol");
    writer.String(to_string(service.protocol));
    write_texts(writer, "clusterIPs", service.cluster_ips);
    writer.Key("port");
    writer.Uint(service.port);
    writer.Key("nodePort");
    writer.Uint(service.node_port);
    write_texts(writer, "externalIPs", service.external_ips);
    write_texts(writer, "loadBalancerIPs", service.load_balancer_ips);
    write_texts(writer, "loadBalancerSourceRanges", service.load_balancer_source_ranges);
    writer.Key("externalTrafficPolicy");
    writer.String(to_string(service.external_traffic_policy));
    writer.Key("internalTrafficPolicy");
    writer.String(to_string(service.internal_traffic_policy));
    writer.Key("healthCheckNodePort");
    writer.Uint(service.health_check_node_port);
    writer.Key("sessionAffinity");
    writer.StartObject();
    writer.Key("type");
    if (service.session_affinity.client_ip) {
        writer.String("ClientIP");
        writer.Key("timeoutSeconds");
        writer.Uint(service.session_affinity.timeout_seconds);
    } else {
        writer.String("None");
    }
    writer.EndObject();
    // Only when the Service names one: the plan's JSON of a Service without
    // the annotation is what it was before the field existed.
    if (!service.ipvs_scheduler.empty()) {
        writer.Key("ipvsScheduler");
        writer.String(service.ipvs_scheduler.c_str());
    }
    write_endpoints(writer, "clusterEndpoints", service.cluster_endpoints);
    write_endpoints(writer, "localEndpoints", service.local_endpoints);
    // Only when there are some, for the same reason as ipvsScheduler.
    if (!service.other_serving_endpoints.empty()) {
        write_endpoints(writer, "otherServingEndpoints", service.other_serving_endpoints);
    }
    writer.EndObject();
}

// Reading: the fields of one JSON object. A failed read returns a default
// value and keeps the first error (naming the field's JSON path), so a
// caller reads every field and checks error() once.
class FieldReader {
  public:
    FieldReader(const rapidjson::Value& object, std::string path)
        : object_(object), path_(std::move(path)) {
        if (!object_.IsObject()) fail(path_.empty() ? "(document)" : path_, "not an object");
    }

    const std::optional<Error>& error() const { return error_; }

    // Records an error for `key` (unless one is recorded already).
    void invalid(const char* key, const std::string& message) { fail(where(key), message); }

    // Whether the object has `key` (for the optional fields).
    bool has(const char* key) const { return object_.HasMember(key); }

    std::string string(const char* key) {
        const rapidjson::Value* value = find(key);
        if (!value) return {};
        return text_of(*value, where(key));
    }

    uint32_t number(const char* key, uint32_t max) {
        const rapidjson::Value* value = find(key);
        if (!value) return 0;
        if (!value->IsUint() || value->GetUint() > max) {
            fail(where(key), fmt::format("not an integer in 0-{}", max));
            return 0;
        }
        return value->GetUint();
    }

    uint16_t port(const char* key) {
        return static_cast<uint16_t>(number(key, std::numeric_limits<uint16_t>::max()));
    }

    bool boolean(const char* key) {
        const rapidjson::Value* value = find(key);
        if (!value) return false;
        if (!value->IsBool()) {
            fail(where(key), "not a boolean");
            return false;
        }
        return value->GetBool();
    }

    // A string naming one of `values` (as to_string() spells them).
    template <typename Enum>
    Enum one_of(const char* key, std::initializer_list<Enum> values) {
        const std::string text = string(key);
        for (Enum value : values) {
            if (text == to_string(value)) return value;
        }
        invalid(key, fmt::format("unknown value \"{}\"", text));
        return *values.begin();
    }

    // A string parsed by `parse` (an address or a prefix).
    template <typename T>
    T parsed(const char* key, Result<T> (*parse)(std::string_view)) {
        const rapidjson::Value* value = find(key);
        if (!value) return T();
        return parse_text(*value, where(key), parse);
    }

    // An array of strings, each parsed by `parse`.
    template <typename T>
    std::vector<T> parsed_array(const char* key, Result<T> (*parse)(std::string_view)) {
        return array<T>(key, [&](const rapidjson::Value& item, const std::string& item_path) {
            return parse_text(item, item_path, parse);
        });
    }

    // An array of objects, each read by `read(FieldReader&)`.
    template <typename T, typename Read>
    std::vector<T> objects(const char* key, Read read) {
        return array<T>(key, [&](const rapidjson::Value& item, const std::string& item_path) {
            FieldReader reader(item, item_path);
            T value = read(reader);
            adopt(reader);
            return value;
        });
    }

    // A nested object read by `read(FieldReader&)`.
    template <typename T, typename Read>
    T object(const char* key, Read read) {
        const rapidjson::Value* value = find(key);
        if (!value) return T();
        FieldReader reader(*value, where(key));
        T result = read(reader);
        adopt(reader);
        return result;
    }

  private:
    std::string where(const char* key) const {
        return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
    }

    void fail(const std::string& path, const std::string& message) {
        if (!error_) {
            error_ = make_error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", path, message));
        }
    }

    void adopt(const FieldReader& nested) {
        if (!error_) error_ = nested.error_;
    }

    // Nothing once an error is recorded: the first error is the one reported.
    const rapidjson::Value* find(const char* key) {
        if (error_) return nullptr;
        auto it = object_.FindMember(key);
        if (it == object_.MemberEnd()) {
            fail(where(key), "missing");
            return nullptr;
        }
        return &it->value;
    }

    std::string text_of(const rapidjson::Value& value, const std::string& path) {
        if (!value.IsString()) {
            fail(path, "not a string");
            return {};
        }
        return std::string(value.GetString(), value.GetStringLength());
    }

    template <typename T>
    T parse_text(const rapidjson::Value& value, const std::string& path,
                 Result<T> (*parse)(std::string_view)) {
        const std::string text = text_of(value, path);
        if (error_) return T();
        auto result = parse(text);
        if (!result) {
            fail(path, result.error().message);
            return T();
        }
        return std::move(*result);
    }

    template <typename T, typename ReadItem>
    std::vector<T> array(const char* key, ReadItem read_item) {
        std::vector<T> result;
        const rapidjson::Value* value = find(key);
        if (!value) return result;
        if (!value->IsArray()) {
            fail(where(key), "not an array");
            return result;
        }
        for (rapidjson::SizeType i = 0; i < value->Size() && !error_; ++i) {
            result.push_back(read_item((*value)[i], fmt::format("{}[{}]", where(key), i)));
        }
        return result;
    }

    const rapidjson::Value& object_;
    std::string path_;
    std::optional<Error> error_;
};

Result<IpAddress> parse_ip(std::string_view text) {
    return IpAddress::parse(text);
}
Result<Prefix> parse_prefix(std::string_view text) {
    return Prefix::parse(text);
}

// `node`: the plan's node, for is_local (not part of the document).
Endpoint read_endpoint(FieldReader& reader, const std::string& node) {
    Endpoint endpoint;
    endpoint.ip = reader.parsed<IpAddress>("ip", parse_ip);
    endpoint.port = reader.port("port");
    endpoint.ready = reader.boolean("ready");
    endpoint.serving = reader.boolean("serving");
    endpoint.terminating = reader.boolean("terminating");
    endpoint.node_name = reader.string("nodeName");
    endpoint.zone = reader.string("zone");
    endpoint.is_local = !node.empty() && endpoint.node_name == node;
    return endpoint;
}

SessionAffinity read_affinity(FieldReader& reader) {
    SessionAffinity affinity;
    const std::string type = reader.string("type");
    if (type == "ClientIP") {
        affinity.client_ip = true;
        affinity.timeout_seconds = reader.number("timeoutSeconds", UINT32_MAX);
    } else if (type != "None") {
        reader.invalid("type", fmt::format("unknown value \"{}\"", type));
    }
    return affinity;
}

ServicePortPlan read_service_port(FieldReader& reader, const std::string& node) {
    const auto policies = {TrafficPolicy::kCluster, TrafficPolicy::kLocal};
    auto endpoints = [&](FieldReader& item) { return read_endpoint(item, node); };
    ServicePortPlan service;
    service.ns = reader.string("namespace");
    service.service = reader.string("service");
    service.port_name = reader.string("portName");
    service.protocol =
        reader.one_of<Protocol>("protocol", {Protocol::kTCP, Protocol::kUDP, Protocol::kSCTP});
    service.cluster_ips = reader.parsed_array<IpAddress>("clusterIPs", parse_ip);
    service.port = reader.port("port");
    service.node_port = reader.port("nodePort");
    service.external_ips = reader.parsed_array<IpAddress>("externalIPs", parse_ip);
    service.load_balancer_ips = reader.parsed_array<IpAddress>("loadBalancerIPs", parse_ip);
    service.load_balancer_source_ranges =
        reader.parsed_array<Prefix>("loadBalancerSourceRanges", parse_prefix);
    service.external_traffic_policy =
        reader.one_of<TrafficPolicy>("externalTrafficPolicy", policies);
    service.internal_traffic_policy =
        reader.one_of<TrafficPolicy>("internalTrafficPolicy", policies);
    service.health_check_node_port = reader.port("healthCheckNodePort");
    service.session_affinity = reader.object<SessionAffinity>("sessionAffinity", read_affinity);
    if (reader.has("ipvsScheduler")) service.ipvs_scheduler = reader.string("ipvsScheduler");
    service.cluster_endpoints = reader.objects<Endpoint>("clusterEndpoints", endpoints);
    service.local_endpoints = reader.objects<Endpoint>("localEndpoints", endpoints);
    if (reader.has("otherServingEndpoints")) {
        service.other_serving_endpoints =
            reader.objects<Endpoint>("otherServingEndpoints", endpoints);
    }
    return service;
}

}  // namespace

std::string plan_to_json(const Plan& plan) {
    std::string json;
    StringOutput output(json);
    Writer writer(output);
    writer.SetIndent(' ', 2);
    writer.StartObject();
    writer.Key("node");
    write_string(writer, plan.node);
    writer.Key("services");
    writer.StartArray();
    for (const auto& service : plan.services) write_service_port(writer, service);
    writer.EndArray();
    // Only when some are known: a plan without ServiceCIDRs prints what it
    // printed before the field existed.
    if (!plan.service_cidrs.empty()) write_texts(writer, "serviceCIDRs", plan.service_cidrs);
    writer.EndObject();
    json += '\n';
    return json;
}

Result<Plan> plan_from_json(std::string_view json) {
    rapidjson::Document document;
    document.Parse(json.data(), json.size());
    if (document.HasParseError()) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("not JSON: {} at offset {}",
                                      rapidjson::GetParseError_En(document.GetParseError()),
                                      document.GetErrorOffset()));
    }
    FieldReader reader(document, "");
    Plan plan;
    plan.node = reader.string("node");
    plan.services = ServicePorts(reader.objects<ServicePortPlan>(
        "services", [&](FieldReader& item) { return read_service_port(item, plan.node); }));
    if (reader.has("serviceCIDRs")) {
        plan.service_cidrs = reader.parsed_array<Prefix>("serviceCIDRs", parse_prefix);
    }
    if (reader.error()) return *reader.error();
    return plan;
}

}  // namespace sb::rules
