"""same_groups.py RULES MANIFEST: exits 0 when the PrometheusRule MANIFEST's
spec.groups equal the plain rule file RULES's groups (parsed, so comments and
layout may differ); otherwise prints the first group that differs and exits 1."""
import sys

import yaml


def main(rules_path, manifest_path):
    with open(rules_path) as f:
        groups = yaml.safe_load(f)["groups"]
    with open(manifest_path) as f:
        manifest = yaml.safe_load(f)
    if manifest.get("apiVersion") != "monitoring.coreos.com/v1" or manifest.get("kind") != "PrometheusRule":
        print(f"{manifest_path}: not a monitoring.coreos.com/v1 PrometheusRule")
        return 1
    embedded = manifest.get("spec", {}).get("groups")
    if embedded == groups:
        return 0
    names = [g["name"] for g in groups]
    embedded_names = [g.get("name") for g in embedded or []]
    if names != embedded_names:
        print(f"{manifest_path}: groups {embedded_names}, {rules_path} has {names}")
    else:
        differing = next(a["name"] for a, b in zip(groups, embedded) if a != b)
        print(f"{manifest_path}: group {differing} differs from {rules_path}'s")
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
