"""Test helper, run as its own ROS process: `python -m tests.interfaces.inspect_types TYPES.json OUT.json`.

Imports every type named in TYPES.json ("cityseeker_interfaces/msg/ViewSet", ".../action/Seek")
through rclpy, and reports for each the RIHS01 type hash that rcl puts on the wire (a publisher
of the message, or of the action's feedback-message topic) and whether the node's
~/get_type_description service describes it.
"""
from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import rclpy
from rclpy.action import ActionServer
from rclpy.node import Node
from rclpy.type_support import check_for_type_support
from type_description_interfaces.srv import GetTypeDescription


def load(name: str) -> Any:
    package, kind, cls = name.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), cls)


def wire_hash(node: Node, topic: str) -> str:
    infos = node.get_publishers_info_by_topic(topic)
    return str(infos[0].topic_type_hash) if infos else "none"


def describe(node: Node, client: Any, type_name: str, type_hash: str) -> dict[str, Any]:
    future = client.call_async(GetTypeDescription.Request(type_name=type_name, type_hash=type_hash,
                                                          include_type_sources=True))
    rclpy.spin_until_future_complete(node, future, timeout_sec=20.0)
    reply = future.result()
    if reply is None:
        return {"ok": False, "reason": "no reply"}
    described = reply.type_description.type_description
    return {"ok": bool(reply.successful), "reason": reply.failure_reason, "type_name": described.type_name,
            "fields": [f.name for f in described.fields],
            "sources": sorted(s.type_name for s in reply.type_sources)}


def main() -> None:
    names = json.loads(open(sys.argv[1]).read())
    rclpy.init()
    node = Node("inspect_types")
    client = node.create_client(GetTypeDescription, "/inspect_types/get_type_description")
    if not client.wait_for_service(timeout_sec=30.0):
        raise SystemExit("~/get_type_description never came up")
    report: dict[str, Any] = {}
    keep = []  # publishers and servers stay alive until the report is written
    for n, name in enumerate(names):
        cls = load(name)
        check_for_type_support(cls)
        if "/action/" in name:
            keep.append(ActionServer(node, cls, f"/test/action{n}", lambda goal, cls=cls: cls.Result()))
            wire_name = f"{name}_FeedbackMessage"
            topic = f"/test/action{n}/_action/feedback"
            parts = {"goal": cls.Goal(), "result": cls.Result(), "feedback": cls.Feedback()}
        else:
            keep.append(node.create_publisher(cls, f"/test/msg{n}", 1))
            wire_name, topic, parts = name, f"/test/msg{n}", {"message": cls()}
        type_hash = wire_hash(node, topic)
        report[name] = {"wire_name": wire_name, "hash": type_hash,
                        "description": describe(node, client, wire_name, type_hash),
                        "parts": {k: type(v).__name__ for k, v in parts.items()}}
    open(sys.argv[2], "w").write(json.dumps(report))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
