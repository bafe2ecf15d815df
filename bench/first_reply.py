"""Start-up as a person meets it: `strata run` on the Telegram fake (no local model, a fresh
database), the seconds from the process's start to its first poll, then the seconds from a
private message to the bot's reply, for a message sent right at the first poll and for one
sent `--later` seconds after it (each in its own start). Runs `--runs` times, alternating.

What `python -m bench.perf --only idle` measures stops at the first poll; this also shows what the
first turn pays for what start-up left to load in the background (the stemmer, the model SDK).

    python bench/first_reply.py --runs 3 --out bench/results/first_reply.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.reliability import harness  # noqa: E402


def one_start(delay: float) -> tuple[float, float]:
    """(seconds to the first poll, seconds from a message `delay` s after it to the reply)."""
    with tempfile.TemporaryDirectory(prefix="strata-first-reply-") as tmp, \
            harness.polling_telegram(Path(tmp), "first") as (proc, fake, polled):
        time.sleep(delay)
        sent = len(fake.calls("sendMessage"))
        asked = time.monotonic()
        fake.push_private_message(4242, "hello, what did I tell you about my sister?")
        if not harness.wait_sync(lambda: len(fake.calls("sendMessage")) > sent, 60, poll=0.005):
            raise RuntimeError("no reply: " + proc.stderr()[-500:])
        return polled, time.monotonic() - asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--later", type=float, default=2.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs: dict[str, list[list[float]]] = {"at_first_poll": [], "later": []}
    for _ in range(args.runs):
        runs["at_first_poll"].append(list(one_start(0.0)))
        runs["later"].append(list(one_start(args.later)))
    summary = {case: {"first_poll_s_median": round(statistics.median(r[0] for r in rs), 3),
                      "reply_s_median": round(statistics.median(r[1] for r in rs), 3),
                      "start_to_reply_s_median": round(statistics.median(
                          r[0] + r[1] + (args.later if case == "later" else 0.0)
                          for r in rs), 3)}
               for case, rs in runs.items()}
    report = {"command": " ".join(["python", "bench/first_reply.py", *sys.argv[1:]]),
              "later_s": args.later, "load_average": os.getloadavg(), "summary": summary,
              "runs": {case: [[round(x, 3) for x in r] for r in rs] for case, rs in runs.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
