"""`switchboard plan` on every cluster file of deploy/examples.

The expected plans (tests/integration/expected/<example>.plan.json) were
written by hand from the planner's rules (docs/planner.md) for
`--hostname-override node-a`, not copied from the program's output.
Comparison is on parsed JSON, so layout and key order do not matter but
list order (the documented sort) does.
"""
import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "deploy" / "examples"
EXPECTED = pathlib.Path(__file__).resolve().parent / "expected"
NAMES = sorted(path.stem for path in EXAMPLES.glob("*.json"))


def run_plan(switchboard_bin, *args):
    return subprocess.run([str(switchboard_bin), "plan", *args], capture_output=True,
                          text=True, timeout=30, check=False)


def test_every_example_has_an_expected_plan():
    assert NAMES, f"no examples in {EXAMPLES}"
    assert sorted(path.name.removesuffix(".plan.json") for path in EXPECTED.glob("*.plan.json")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_plan_of_example(switchboard_bin, name):
    result = run_plan(switchboard_bin, "--source", f"file:{EXAMPLES / name}.json",
                      "--hostname-override", "node-a")
    assert result.returncode == 0, result.stderr
    expected = json.loads((EXPECTED / f"{name}.plan.json").read_text())
    assert json.loads(result.stdout) == expected


def test_plan_accepts_flag_equals_value(switchboard_bin):
    result = run_plan(switchboard_bin, f"--source=file:{EXAMPLES / 'nodeport.json'}",
                      "--hostname-override=node-a")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == json.loads((EXPECTED / "nodeport.plan.json").read_text())


def test_unreadable_source_exits_2_naming_the_file(switchboard_bin, tmp_path):
    missing = tmp_path / "no-such-cluster.json"
    result = run_plan(switchboard_bin, "--source", f"file:{missing}", "--hostname-override", "node-a")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "no-such-cluster.json" in lines[0]
    assert result.stdout == ""


def test_source_that_is_not_json_exits_2_naming_the_file(switchboard_bin, tmp_path):
    broken = tmp_path / "broken-cluster.json"
    broken.write_text('{"apiVersion": "v1", "kind": "List", "items": [')
    result = run_plan(switchboard_bin, "--source", f"file:{broken}", "--hostname-override", "node-a")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "broken-cluster.json" in lines[0]


def test_bad_flag_exits_2_naming_the_flag(switchboard_bin):
    result = run_plan(switchboard_bin, "--source", f"file:{EXAMPLES / 'nodeport.json'}",
                      "--hostname-override", "node-a", "--no-such-flag")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "--no-such-flag" in lines[0]
