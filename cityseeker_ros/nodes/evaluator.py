"""The evaluator: writes a ROS run's results exactly as `cityseeker benchmark` writes them.

It receives the supervisor's outcomes (each the episodes.jsonl record of a finished task) and
appends them to `out`/episodes.jsonl, rewriting summary.json after each, with config.json made
from the same run settings, so `cityseeker report OUT` and every other tool read a ROS run like
an in-process one. Outcomes arrive latched with a deep history: an evaluator that starts late
or restarts gets every outcome again and skips those already written.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from cityseeker_ros.core.datasets import load_dataset
from cityseeker_ros.core.evaluation.benchmark import RunOutput, run_manifest, run_tasks
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.sensing.views import make_view_source
from cityseeker_ros.nodes.common import publish_diagnostics
from cityseeker_ros.ros import qos, typed
from cityseeker_ros.ros.parameters import EVALUATOR, declare, run_config
from cityseeker_ros.ros.schema import OutcomeMsg
from cityseeker_ros.ros.spin import spin


class EvaluatorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("evaluator", **kwargs)
        declare(self, EVALUATOR)
        p = {spec.name: self.get_parameter(spec.name).value for spec in EVALUATOR}
        if not p["out"]:
            raise ConfigError("parameter out is required: the output folder")
        config, _ = run_config(p)
        worlds = {w.city: w for w in load_dataset(Path(config.data), config.dataset, family=config.family)}
        # What defines the pixels, as the in-process benchmark records it.
        view_sources = {city: make_view_source(config.views, w, config.view_params).describe()
                        for city, w in worlds.items()} if config.views else {}
        wanted = [(worlds[c].episodes[i].episode_id, s) for c, i, s in run_tasks(config, worlds)]
        command = " ".join(["evaluator", *sys.argv[1:]])
        self._output = RunOutput(Path(p["out"]), run_manifest(config, worlds, view_sources, command), wanted)
        self._output.write_summary()  # a resumed run's summary is current before anything new arrives
        self._duplicates = 0
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", qos.DIAGNOSTICS)
        self.create_subscription(typed.msg_type(OutcomeMsg), f"{p['supervisor_node'].rstrip('/')}/outcome",
                                 self._on_outcome, qos.OUTCOMES)
        self.create_timer(float(p["diagnostics_period_s"]), self._publish_diagnostics)
        self.get_logger().info(f"writing {p['out']}: {len(self._output.done)} of {len(wanted)} tasks already there")

    def _on_outcome(self, msg: Any) -> None:
        try:
            outcome: OutcomeMsg = typed.from_ros(msg)
        except ValueError as exc:
            self.get_logger().warning(f"ignored a malformed outcome: {exc}")
            return
        if not self._output.add(outcome.record):
            self._duplicates += 1
            return
        self._output.write_summary()
        record = outcome.record
        self.get_logger().info(f"wrote {record['episode_id']} seed {record['seed']} "
                               f"({len(self._output.done)}/{len(self._output.wanted)})")

    def _publish_diagnostics(self) -> None:
        values = {"written": len(self._output.done), "wanted": len(self._output.wanted),
                  "duplicates_skipped": self._duplicates, "out": str(self._output.out)}
        message = "complete" if self._output.complete else "recording"
        publish_diagnostics(self, self._diag_pub, "evaluator", "ok", message, values)

    def destroy_node(self) -> None:
        self._output.close()
        super().destroy_node()


def main(args=None) -> None:
    spin(EvaluatorNode, "evaluator", args)


if __name__ == "__main__":
    main()
