"""Generates the gavel workflows the side-by-side benchmark runs.

Every workflow uses only script seats, so it runs offline and its
cost is gavel's own: parsing, the executor, the record (one fdatasync'd line
per event), the seat's file writes and, for the loop, one command per
iteration.

    python3 bench/gen_workflows.py chain 1000 DIR
    python3 bench/gen_workflows.py fanout 16 DIR
    python3 bench/gen_workflows.py loop 1000 DIR
    python3 bench/gen_workflows.py panel-loop 100000 DIR

Each call writes DIR/workflow.toml, its brief and seat scripts, and prints
the workflow's path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BRIEF = "---\nfiles: [step.txt]\n---\n# Benchmark\nWrite the file each stage names.\n"

# `refine` accepts at most 100 rounds (gavel-runtime/src/workflow.rs), so a
# longer send-back loop is split into consecutive loops of at most this many.
MAX_REFINE = 100


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def chain(n: int, out: Path) -> Path:
    """n builder stages in a row on one script seat with no delay; stage i
    writes one tiny file, `out/sNNNN.txt`."""
    turns = [
        {"reply": f"wrote s{i:04d}.txt", "files": {f"out/s{i:04d}.txt": f"{i}\n"}}
        for i in range(1, n + 1)
    ]
    _write(out / "seats" / "writer.json", json.dumps({"family": "anthropic", "write": turns}))
    _write(out / "brief.md", BRIEF)
    lines = [
        f'name = "chain-{n}"',
        'brief = "brief.md"',
        "",
        "[options]",
        'seat_timeout = "1m"',
        "",
        "[seats]",
        'writer = { engine = "script", script = "seats/writer.json" }',
        "",
    ]
    for i in range(1, n + 1):
        lines += [
            "[[stage]]",
            f'name = "s{i:04d}"',
            'agent = "writer"',
            f'writes = ["out/s{i:04d}.txt"]',
            "",
        ]
    _write(out / "workflow.toml", "\n".join(lines))
    return out / "workflow.toml"


def fanout(k: int, out: Path, delay_ms: int = 100) -> Path:
    """One `panel` stage of k script reviewers, each answering `pass` after
    `delay_ms`; every one must accept (`agree = k`)."""
    seats = []
    for i in range(1, k + 1):
        script = {"review": [{"reply": {"decision": "pass", "findings": []}, "delay_ms": delay_ms}]}
        _write(out / "seats" / f"r{i:02d}.json", json.dumps(script))
        seats.append(f"r{i:02d}")
    lines = [
        f'name = "fanout-{k}"',
        "",
        "[options]",
        'seat_timeout = "1m"',
        "",
        "[seats]",
    ]
    lines += [f'{s} = {{ engine = "script", script = "seats/{s}.json", family = "script" }}' for s in seats]
    lines += [
        "",
        "[roles]",
        "review = [" + ", ".join(f'"{s}"' for s in seats) + "]",
        "",
        "[[stage]]",
        'name = "review"',
        'panel = "review"',
        f"agree = {k}",
        "allow_same_family = true",
        "",
    ]
    _write(out / "workflow.toml", "\n".join(lines))
    return out / "workflow.toml"


def loop(n: int, out: Path) -> Path:
    """An n-iteration send-back loop: a builder stage and a `run` stage that
    `sends_back_to` it, passing only once the builder's turn that closes the
    loop wrote a marker file. gavel caps `refine` at 100, so n iterations are
    ceil(n / 100) consecutive loops of at most 100 (loop j's builder writes
    `done{j}` on its last round)."""
    segments = []
    left = n
    while left > 0:
        segments.append(min(MAX_REFINE, left))
        left -= segments[-1]
    turns = []
    for j, rounds in enumerate(segments, start=1):
        for r in range(1, rounds + 1):
            files = {"step.txt": f"{len(turns) + 1}\n"}
            if r == rounds:
                files[f"done{j:02d}"] = "done\n"
            turns.append({"reply": f"wrote step {len(turns) + 1}", "files": files})
    _write(out / "seats" / "writer.json", json.dumps({"family": "anthropic", "write": turns}))
    _write(out / "brief.md", BRIEF)
    lines = [
        f'name = "loop-{n}"',
        'brief = "brief.md"',
        "",
        "[options]",
        'seat_timeout = "1m"',
        "",
        "[seats]",
        'writer = { engine = "script", script = "seats/writer.json" }',
        "",
    ]
    for j, rounds in enumerate(segments, start=1):
        lines += [
            "[[stage]]",
            f'name = "build{j:02d}"',
            'agent = "writer"',
            'writes = ["step.txt"]',
            f"refine = {rounds}",
            "",
            "[[stage]]",
            f'name = "check{j:02d}"',
            f'run = ["test", "-f", "done{j:02d}"]',
            'timeout = "30s"',
            f'sends_back_to = "build{j:02d}"',
            "",
        ]
    _write(out / "workflow.toml", "\n".join(lines))
    return out / "workflow.toml"


# Events one round of a panel-loop stage writes: stage:start, the builder's
# seat:request, seat:reply and build:done, then 16 reviewers x (seat:request,
# seat:reply, review:decision).
PANEL = 16
EVENTS_PER_ROUND = 4 + 3 * PANEL


def panel_loop(events: int, out: Path) -> Path:
    """A real run of at least `events` events: builder stages reviewed by a
    panel of 16 script reviewers; one reviewer asks for a revision (with a new
    finding each time, so the loop breaker stays out of it) on every round but
    each stage's last, so every stage uses all its rounds."""
    rounds_total = -(-(events - 2) // EVENTS_PER_ROUND)
    stages = []
    left = rounds_total
    while left > 0:
        stages.append(min(MAX_REFINE, left))
        left -= stages[-1]
    # Even out the stages so they all have about the same rounds.
    per = -(-rounds_total // len(stages))
    stages = [per] * len(stages)
    critic_turns = []
    for s, rounds in enumerate(stages, start=1):
        for r in range(1, rounds + 1):
            if r < rounds:
                reply = {
                    "decision": "revise",
                    "findings": [
                        {
                            "severity": "should-fix",
                            "evidence": f"page.md:1: stage {s} round {r}: the opening line does not say who the page is for",
                            "fix": "Name the reader in the first sentence.",
                        }
                    ],
                }
            else:
                reply = {"decision": "pass", "findings": []}
            critic_turns.append({"reply": reply})
    _write(out / "seats" / "writer.json", json.dumps({"write": [{"reply": "wrote page.md", "files": {"page.md": "# Page\nFor new staff.\n"}}]}))
    _write(out / "seats" / "r01.json", json.dumps({"review": critic_turns}))
    for i in range(2, PANEL + 1):
        _write(out / "seats" / f"r{i:02d}.json", json.dumps({"review": [{"reply": {"decision": "pass", "findings": []}}]}))
    _write(out / "brief.md", "---\nfiles: [page.md]\n---\n# Page\nWrite the page.\n")
    seats = [f"r{i:02d}" for i in range(1, PANEL + 1)]
    lines = [
        f'name = "panel-loop-{events}"',
        'brief = "brief.md"',
        "",
        "[options]",
        'seat_timeout = "1m"',
        "",
        "[seats]",
        'writer = { engine = "script", script = "seats/writer.json", family = "script" }',
    ]
    lines += [f'{s} = {{ engine = "script", script = "seats/{s}.json", family = "script" }}' for s in seats]
    lines += ["", "[roles]", "review = [" + ", ".join(f'"{s}"' for s in seats) + "]", ""]
    for s, rounds in enumerate(stages, start=1):
        lines += [
            "[[stage]]",
            f'name = "page{s:02d}"',
            'agent = "writer"',
            'writes = ["page.md"]',
            'reviewed_by = "review"',
            f"refine = {rounds}",
            "allow_same_family = true",
            "",
        ]
    _write(out / "workflow.toml", "\n".join(lines))
    return out / "workflow.toml"


KINDS = {"chain": chain, "fanout": fanout, "loop": loop, "panel-loop": panel_loop}


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[1] not in KINDS:
        print(__doc__, file=sys.stderr)
        return 2
    print(KINDS[argv[1]](int(argv[2]), Path(argv[3])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
