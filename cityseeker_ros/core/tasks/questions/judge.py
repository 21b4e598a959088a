"""The paper's answer-quality score: an LLM judge marks each answer 1-5 against the expected one
(CityEQA appendix A.3, after OpenEQA's LLM-Match; it agreed with people at Spearman 0.85).

It is a separate step over finished records, so a run never depends on a judge model and the
same records can be judged by several. Any configured VLM backend serves (text only). Each judged
record keeps the prompt it was judged with, the reply, and the backend's description (model,
endpoint), so a score can be traced and repeated.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from cityseeker_ros.core.tasks.questions.answers import answer_invalid

if TYPE_CHECKING:
    from cityseeker_ros.core.agents.vlm.backend import Backend

# The paper's Figure 9, as printed (one worked example).
JUDGE_PROMPT = (
    "You are an AI assistant who will help me to evaluate the response given the question and the correct answer.\n"
    "To mark a response, you should output a single integer between 1 and 5 (including 1, 5).\n"
    "5 means that the response perfectly matches the answer.\n"
    "1 means that the response is completely different from the answer, or the answer is meaningless, such as "
    "\"It's not possible to determine...\"\n"
    "\n"
    "Output format:\n"
    "{\"mark\": <integer>}\n"
    "\n"
    "Example 1:\n"
    "Question: What's the name of the shop to the left of the supermarket?\n"
    "Answer: Starbucks\n"
    "Response: Starbuks\n"
    "Output: {\"mark\": 4}\n"
    "\n"
    "Your Turn:\n"
    "Question: {question}\n"
    "Answer: {answer}\n"
    "Response: {prediction}\n")
JUDGE_PROMPT_SHA256 = hashlib.sha256(JUDGE_PROMPT.encode()).hexdigest()
NO_ANSWER_MARK = 1  # the paper's 1: "the answer is meaningless"; no model is asked about nothing


def judge_prompt(question: str, answer: str, prediction: str) -> str:
    # str.replace, not str.format: the template's JSON braces stay as they are.
    return JUDGE_PROMPT.replace("{question}", question).replace("{answer}", answer).replace("{prediction}",
                                                                                              prediction)


def parse_mark(text: str) -> Optional[int]:
    """The 1-5 mark of a judge's reply: {"mark": n} (also inside prose or a code fence), else a lone
    integer 1-5; None when the reply holds neither."""
    found = re.search(r"\"?mark\"?\s*[:=]\s*\"?([1-5])\b", text)
    if found is None:
        found = re.fullmatch(r"\s*([1-5])\s*\.?\s*", text)
    return int(found.group(1)) if found else None


def judge(records: Sequence[Mapping[str, Any]], backend: Backend, *, max_new_tokens: int = 32,
          batch_size: int = 16) -> list[dict[str, Any]]:
    """Copies of `records` with a "judge" field on each question record: {"score": 1-5 or None (an
    unreadable reply), "reply", "prompt", "prompt_sha256", "model"}. Records of other families pass
    through unchanged; a missing or invalid answer scores 1 without a model call."""
    from cityseeker_ros.core.agents.vlm.backend import GenerationRequest, Message

    out = [dict(r) for r in records]
    model = backend.describe()
    asked: list[tuple[int, str]] = []
    for i, r in enumerate(out):
        if r.get("family") != "questions":
            continue
        answer = r.get("answer")
        prompt = judge_prompt(str(r.get("question", "")), str(r.get("expected", "")), str(answer or ""))
        if answer is None or answer_invalid(answer):
            r["judge"] = {"score": NO_ANSWER_MARK, "reply": None, "reason": "no valid answer", "prompt": prompt,
                          "prompt_sha256": JUDGE_PROMPT_SHA256, "model": model}
        else:
            asked.append((i, prompt))
    for k in range(0, len(asked), max(1, batch_size)):
        chunk = asked[k:k + max(1, batch_size)]
        requests = [GenerationRequest((Message("user", (prompt,)),), max_new_tokens=max_new_tokens)
                    for _, prompt in chunk]
        for (i, prompt), gen in zip(chunk, backend.generate(requests)):
            out[i]["judge"] = {"score": parse_mark(gen.text), "reply": gen.text, "prompt": prompt,
                               "prompt_sha256": JUDGE_PROMPT_SHA256, "model": model}
    return out


def judge_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and count of the judged marks (unreadable replies are counted, not averaged), and the
    judge models used, for a summary beside the run's."""
    marks, unreadable, models = [], 0, set()
    for r in records:
        j = r.get("judge")
        if not isinstance(j, Mapping):
            continue
        models.add(json.dumps(j.get("model"), sort_keys=True))
        if j.get("score") is None:
            unreadable += 1
        else:
            marks.append(int(j["score"]))
    return {"judge_mean": round(sum(marks) / len(marks), 4) if marks else None, "judged": len(marks),
            "unreadable": unreadable, "models": [json.loads(m) for m in sorted(models)],
            "prompt_sha256": JUDGE_PROMPT_SHA256}
