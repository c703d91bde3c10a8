// Realistic Kubernetes objects (shapes copied from `kubectl get -o json`
// output) and helpers that derive malformed variants from them.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fixtures {

// A ClusterIP Service with a named and a numbered targetPort.
inline const char* const kService = R"({
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {
    "annotations": {
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\",\"kind\":\"Service\"}\n"
    },
    "creationTimestamp": "2024-05-02T10:11:12Z",
    "labels": {"app": "web", "tier": "frontend"},
    "name": "web",
    "namespace": "default",
    "resourceVersion": "123456",
    "uid": "0b5e5f5c-1c43-4a53-9a51-1b2f3c4d5e6f"
  },
  "spec": {
    "clusterIP": "10.96.12.34",
    "clusterIPs": ["10.96.12.34"],
    "internalTrafficPolicy": "Cluster",
    "ipFamilies": ["IPv4"],
    "ipFamilyPolicy": "SingleStack",
    "ports": [
      {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
      {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9091}
    ],
    "selector": {"app": "web"},
    "sessionAffinity": "None",
    "type": "ClusterIP"
  },
  "status": {"loadBalancer": {}}
})";

// A dual-stack LoadBalancer with externalTrafficPolicy Local, ClientIP
// affinity, source ranges and an ingress IP in Proxy mode.
inline const char* const kLoadBalancer = R"({
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"name": "shop", "namespace": "prod", "resourceVersion": "77", "uid": "u-2"},
  "spec": {
    "allocateLoadBalancerNodePorts": true,
    "clusterIP": "10.96.0.50",
    "clusterIPs": ["10.96.0.50", "fd00:10:96::50"],
    "externalIPs": ["192.0.2.10"],
    "externalTrafficPolicy": "Local",
    "healthCheckNodePort": 32001,
    "internalTrafficPolicy": "Local",
    "ipFamilies": ["IPv4", "IPv6"],
    "ipFamilyPolicy": "PreferDualStack",
    "loadBalancerSourceRanges": [" 203.0.113.7/24 ", "2001:db8::/32"],
    "ports": [
      {"name": "https", "nodePort": 30443, "port": 443, "protocol": "TCP", "targetPort": 8443},
      {"name": "quic", "nodePort": 30443, "port": 443, "protocol": "UDP", "targetPort": 8443}
    ],
    "publishNotReadyAddresses": true,
    "selector": {"app": "shop"},
    "sessionAffinity": "ClientIP",
    "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
    "trafficDistribution": "PreferClose",
    "type": "LoadBalancer"
  },
  "status": {
    "loadBalancer": {
      "ingress": [
        {"ip": "198.51.100.20", "ipMode": "Proxy"},
        {"hostname": "lb-1234.elb.example.com"}
      ]
    }
  }
})";

// An EndpointSlice as the endpointslice controller writes it.
inline const char* const kSlice = R"({
  "addressType": "IPv4",
  "apiVersion": "discovery.k8s.io/v1",
  "endpoints": [
    {
      "addresses": ["10.244.1.5"],
      "conditions": {"ready": true, "serving": true, "terminating": false},
      "hints": {"forZones": [{"name": "zone-a"}]},
      "nodeName": "node-1",
      "targetRef": {"kind": "Pod", "name": "web-7d4b9c-abcde", "namespace": "default",
                    "uid": "5d0f-11"},
      "zone": "zone-a"
    },
    {
      "addresses": ["10.244.2.7"],
      "conditions": {"ready": false, "serving": true, "terminating": true},
      "hostname": "web-1",
      "nodeName": "node-2",
      "targetRef": {"kind": "Pod", "name": "web-7d4b9c-fghij", "namespace": "default"},
      "zone": "zone-b"
    }
  ],
  "kind": "EndpointSlice",
  "metadata": {
    "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2024-05-02T10:11:13Z"},
    "generateName": "web-",
    "labels": {
      "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
      "kubernetes.io/service-name": "web"
    },
    "name": "web-abc12",
    "namespace": "default",
    "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "0b5e"}],
    "resourceVersion": "123460",
    "uid": "9f9f"
  },
  "ports": [
    {"name": "http", "port": 8080, "protocol": "TCP"},
    {"name": "metrics", "port": 9091, "protocol": "TCP"}
  ]
})";

inline const char* const kNode = R"({
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "labels": {
      "kubernetes.io/hostname": "node-1",
      "kubernetes.io/os": "linux",
      "topology.kubernetes.io/zone": "zone-a"
    },
    "name": "node-1",
    "resourceVersion": "991",
    "uid": "n-1"
  },
  "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
  "status": {
    "addresses": [
      {"address": "192.168.49.2", "type": "InternalIP"},
      {"address": "node-1", "type": "Hostname"}
    ]
  }
})";

// A dual-stack Pod of a Deployment as `kubectl get pod -o json` prints it
// (containers cut short), with the labels and annotations real Pods carry.
inline const char* const kPod = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T09:00:00Z"},
    "creationTimestamp": "2024-05-02T10:11:12Z",
    "generateName": "web-7d4b9c-",
    "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
    "name": "web-7d4b9c-abcde",
    "namespace": "shop",
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c",
                         "uid": "rs-1", "controller": true, "blockOwnerDeletion": true}],
    "resourceVersion": "5150",
    "uid": "p-1"
  },
  "spec": {
    "containers": [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}],
    "dnsPolicy": "ClusterFirst",
    "enableServiceLinks": true,
    "nodeName": "node-1",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler"
  },
  "status": {
    "conditions": [{"type": "Ready", "status": "True"}],
    "hostIP": "192.168.49.2",
    "phase": "Running",
    "podIP": "10.244.1.7",
    "podIPs": [{"ip": "10.244.1.7"}, {"ip": "fd00:10:244:1::7"}],
    "qosClass": "BestEffort",
    "startTime": "2024-05-02T10:11:12Z"
  }
})";

inline rapidjson::Document parse(const std::string& json) {
    rapidjson::Document document;
    document.Parse(json.c_str());
    if (document.HasParseError()) throw std::runtime_error("fixture is not JSON: " + json);
    return document;
}

inline std::string to_json(const rapidjson::Value& value) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    value.Accept(writer);
    return buffer.GetString();
}

// One edit of a fixture: set the JSON Pointer `pointer` to `json` (a JSON
// text), or remove it when `json` is nullptr.
struct Edit {
    const char* pointer;
    const char* json;
};

inline rapidjson::Document edited(const char* base, std::vector<Edit> edits) {
    rapidjson::Document document = parse(base);
    for (const auto& edit : edits) {
        if (!edit.json) {
            rapidjson::Pointer(edit.pointer).Erase(document);
            continue;
        }
        rapidjson::Document value(&document.GetAllocator());
        value.Parse(edit.json);
        if (value.HasParseError()) throw std::runtime_error(std::string("bad edit: ") + edit.json);
        rapidjson::Pointer(edit.pointer).Set(document, value);
    }
    return document;
}

}  // namespace fixtures
