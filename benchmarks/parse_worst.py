"""Parse time of the worst model replies we could build, at 1 MB: the parser must stay linear.

Each reply targets one pattern or loop of `cityseeker_ros/core/agents/vlm/parsing.py` (overlapping
quantifiers after a verb, digit runs, unterminated strings, `{` at every position, nesting past
the depth limit, conflicting answers...). Every reply is parsed by the three entry points
(choice, single, stop). Figures are the best of `--repeats` runs in CPU time of this process
(time.process_time: other work on a shared machine does not inflate it), with the wall time of
the slowest parser beside them, and a linear scan of the same 1 MB (`text.lower()` plus one
regex pass) for scale. The parser reads the first parsing.MAX_CHARS characters; `--uncut` also
times it on whole texts with the limit lifted, at 1/8 and full size: linear growth is a ratio
near 8 (a quadratic parser gives 64). Passes (exit 0) when every 1 MB parse takes at most 50 ms
of CPU time.

    python benchmarks/parse_worst.py [--size 1000000] [--repeats 5] [--uncut]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from cityseeker_ros.core.agents.vlm import parsing

LIMIT_S = 0.050  # the most one parse of a 1 MB reply may take
_SCAN = re.compile(r"\w+")


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    """`head`, then `unit` repeated, then `tail`: `size` characters in all."""
    body = max(0, size - len(head) - len(tail))
    return head + (unit * (body // len(unit) + 1))[:body] + tail


def worst_replies(size: int) -> dict[str, str]:
    """Replies of `size` characters, each aimed at one pattern or loop of the parser."""
    third = size // 3
    return {
        "verb + stars (issue 12)": _fill("*", size, "I choose "),
        "verb + mixed markup": _fill(" :*\"'`([", size, "I choose "),
        "verb + spaces": _fill(" ", size, "choose", "x"),
        "verbs repeated": _fill("I choose view ", size),
        "verb after run": _fill("*", size, "", " choose B"),
        "digit run, pattern": _fill("1", size, "action: ", "x"),
        "digit run, JSON": _fill("1", size, '{"action": '),
        "digit run, float": _fill("1", size, '{"confidence": 0.', "e"),
        "braces": _fill("{", size),
        "brackets": _fill("[", size),
        "object chain": _fill("{a:", size),
        "deep, then dense list": _fill("1,", size, "{k:[" * 60),
        "re-read past depth": _fill("1,", size, "{a:" * 30 + "[", "{b:" * 30),
        "nested, dense": _fill("{a:[{},", size),
        "keys, no close": _fill("a:1 ", size, "{"),
        "commas": _fill(",", size, "{a:["),
        "unterminated string": _fill("x", size, '{"action": "'),
        "escapes, open": _fill("\\n", size, '{"thoughts": "'),
        "escapes, closed": _fill("\\u0041", size - 2, '{"thoughts": "') + '"}',
        "quotes in strings": _fill("{a:\"{b:'", size),
        "open comment": _fill("x", size, "{/*"),
        "line comments": _fill("# c\n", size, "{a:1 "),
        "answer lines, same": _fill("action: A\n", size),
        "answer lines, different": _fill("action: A\naction: B\n", size),
        "answer lines, distinct": "".join(f"answer: {i}\n" for i in range(size))[:size],
        "objects, same answer": _fill('{"action": "B"}', size),
        "stop words": _fill("STOP CONTINUE keep going I will stop ", size),
        "stop flag + spaces": _fill(" ", size, '{"stop": "stop', 'x"}'),
        "negation + spaces": _fill(" ", size, "i", "x"),
        "view prefix + spaces": _fill(" ", size, '{"action": "view', 'x"}'),
        "unicode": _fill("咖啡🏪 I choose é \ud800 ", size),
        "JSON then junk": _fill("{", size, '{"action": "B", "confidence": 0.9} '),
        "junk then JSON": _fill("*", size, "I choose ", '{"action": "B", "confidence": 0.9}'),
        "string of braces": _fill("{", third, '{"thoughts": "') + _fill("1,", size - third, "[", "]"),
    }


PARSERS: dict[str, Callable[[str], Any]] = {
    "choice": lambda text: parsing.parse_choice(text, 3),
    "single": lambda text: parsing.parse_single(text, 3),
    "stop": parsing.parse_stop,
}


def best_time(fn: Callable[[str], Any], text: str, repeats: int,
              clock: Callable[[], float] = time.process_time) -> float:
    """The best of `repeats` runs, by default in CPU seconds of this process."""
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        fn(text)
        best = min(best, clock() - t0)
    return best


def linear_scan(text: str) -> None:
    """A baseline linear in the text: what one pass over it costs on this machine right now."""
    text.lower()
    _SCAN.findall(text)


def parse_all(text: str) -> None:
    for parse in PARSERS.values():
        parse(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="characters per reply")
    ap.add_argument("--repeats", type=int, default=5, help="runs per figure; the best counts")
    ap.add_argument("--uncut", action="store_true", help="also time whole texts with the limit lifted")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}; replies of {args.size} "
          f"characters, read up to {parsing.MAX_CHARS}; CPU ms, best of {args.repeats}")
    print(f"{'reply':26s} {'choice':>7s} {'single':>7s} {'stop':>7s} {'wall':>7s} {'scan':>7s} {'/scan':>6s}"
          + ("   uncut (all three): 1/8 size, full, ratio" if args.uncut else ""))
    worst = 0.0
    for name, text in worst_replies(args.size).items():
        times = [best_time(parse, text, args.repeats) for parse in PARSERS.values()]
        wall = max(best_time(parse, text, args.repeats, time.perf_counter) for parse in PARSERS.values())
        scan = best_time(linear_scan, text, args.repeats)
        worst = max(worst, *times)
        line = (f"{name:26s} " + " ".join(f"{t * 1e3:7.2f}" for t in times)
                + f" {wall * 1e3:7.2f} {scan * 1e3:7.2f} {max(times) / scan:6.2f}")
        if args.uncut:
            limit = parsing.MAX_CHARS
            parsing.MAX_CHARS = args.size
            try:
                small = best_time(parse_all, worst_replies(args.size // 8)[name], max(1, args.repeats // 2))
                full = best_time(parse_all, text, 1)
            finally:
                parsing.MAX_CHARS = limit
            line += f"   {small * 1e3:9.1f} {full * 1e3:9.1f} {full / small:5.1f}x"
        print(line, flush=True)
    ok = worst <= LIMIT_S
    print(f"worst parse: {worst * 1e3:.2f} ms CPU ({'within' if ok else 'OVER'} the {LIMIT_S * 1e3:.0f} ms limit)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
