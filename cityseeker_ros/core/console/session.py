"""The operator's commands on the server: every console message checked, counted and passed on or
dropped, never raised.

Parsing is core.ar.protocol.parse_command (the module the phone page's messages go through too);
here a goal's words and budget are also checked as the Seek server checks them
(core.loop.seek.check_request), so a goal the server would refuse is refused at once with the
server's code and words. Counts are by reason (`estop.dropped.unconfirmed`,
`message.dropped.not_json`, ...), so a test or an operator can tell a noisy page from a hostile
one. Plain Python: the server calls it from its event loop only."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Union

from cityseeker_ros.core.ar.protocol import COMMAND_NAMES, ConsoleCommand, Malformed, SeekGoal, parse_command
from cityseeker_ros.core.loop.seek import SeekRequest, check_request


@dataclass(frozen=True)
class Refused:
    """A well-formed command the stack would refuse anyway: its code and one line for the page."""

    command: str
    code: str
    reason: str


class ConsoleSession:
    """`text(message)` returns the command to pass on, a Refused, or None (dropped and counted)."""

    def __init__(self, run_max_steps: int = 35) -> None:
        self.run_max_steps = run_max_steps
        self.counts: Counter[str] = Counter()
        self.last_drop = ""

    def text(self, message: Union[str, bytes]) -> Union[ConsoleCommand, Refused, None]:
        try:
            command = parse_command(message)
        except Malformed as exc:
            self.counts[f"{exc.kind}.dropped.{exc.reason}"] += 1
            self.counts["dropped"] += 1
            self.last_drop = str(exc)
            return None
        name = COMMAND_NAMES[type(command)]
        if isinstance(command, SeekGoal):
            refused = check_request(SeekRequest(command.text, command.max_steps, family=command.family),
                                    self.run_max_steps)
            if refused is not None:
                self.counts[f"seek.refused.{refused.code}"] += 1
                return Refused(name, refused.code, refused.reason)
        self.counts[f"command.{name}"] += 1
        return command

    def dropped(self, reason: str) -> None:
        """A message the socket itself could not read (a binary one, a broken frame): counted."""
        self.counts[f"message.dropped.{reason}"] += 1
        self.counts["dropped"] += 1
        self.last_drop = f"message: {reason}"
