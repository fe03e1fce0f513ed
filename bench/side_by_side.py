#!/usr/bin/env python3
"""gavel and LangGraph doing the same work in one run, with ratios.

Run through `bench/run.sh` (it builds gavel, makes the LangGraph venv and
passes the paths). Standard library only; LangGraph runs in its own
processes (`langgraph_work.py`, with the venv's python).

Every figure is measured here, in this run: nothing is copied from earlier
runs or from the reference notes. Repetitions are interleaved (gavel, then
LangGraph, then gavel again ...) so a noisy neighbour on a shared machine
hits both sides alike; each figure is the median, with min-max beside it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
import gen_workflows as gen  # noqa: E402

CHAIN = 1000
LOOP = 1000
FAN = 16
BIG_EVENTS = 100_000
FLOOR_LINES = 2000

# The targets (issue 5, "Targets").
TARGET_INMEM_RATIO = 100.0  # LangGraph no-checkpoint step / gavel step, at least
TARGET_DURABLE_FLOOR = 1.5  # gavel durable step / fsync floor, at most
TARGET_FAN_MS = 105.0  # fan-out 16 x 100 ms, wall, at most
TARGET_RESUME_MS = 200.0  # resume of a 100,000-event record, under
TARGET_VERSION_MS = 10.0  # `gavel --version`, under
TARGET_BYTES_RATIO = 20.0  # SqliteSaver bytes / gavel record bytes, at least


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Running and timing processes.


class Proc:
    """One finished process: wall seconds, CPU seconds, peak RSS, stdout."""

    def __init__(self, wall: float, user: float, sys_: float, rss_kb: int, stdout: str, code: int):
        self.wall, self.user, self.sys, self.rss_kb, self.stdout, self.code = wall, user, sys_, rss_kb, stdout, code


def run(cmd: list[str], *, cwd: Path | None = None, ok=(0,)) -> Proc:
    """Runs `cmd` under `/usr/bin/time -v`; wall time from this process's clock."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-v", "-o", tf.name, *cmd]
        t = time.perf_counter()
        done = subprocess.run(full, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t
        report = Path(tf.name).read_text()
    if done.returncode not in ok:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")

    def field(name: str) -> float:
        m = re.search(rf"{re.escape(name)}: ([0-9.]+)", report)
        return float(m.group(1)) if m else float("nan")

    return Proc(
        wall,
        field("User time (seconds)"),
        field("System time (seconds)"),
        int(field("Maximum resident set size (kbytes)")),
        done.stdout,
        done.returncode,
    )


def repeat(cmd: list[str], runs: int, warmup: int = 3) -> list[float]:
    """Wall seconds of `runs` runs of a short command: hyperfine when the
    machine has it (no shell), else a plain loop."""
    if shutil.which("hyperfine"):
        with tempfile.NamedTemporaryFile("r", suffix=".json") as tf:
            subprocess.run(
                ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs", str(runs),
                 "--export-json", tf.name, subprocess.list2cmdline(cmd)],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            return json.loads(Path(tf.name).read_text())["results"][0]["times"]
    for _ in range(warmup):
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times


def count_syncs(cmd: list[str]) -> int | None:
    """fdatasync + fsync calls `cmd` makes (all threads), by strace; None
    without strace. Run once, outside the timed runs."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as tf:
        subprocess.run(["strace", "-f", "-c", "-e", "trace=fdatasync,fsync", "-o", tf.name, *cmd],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = 0
        for line in Path(tf.name).read_text().splitlines():
            parts = line.split()
            if parts and parts[-1] in ("fdatasync", "fsync"):
                total += int(parts[3])
        return total


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def fmt_ms(xs: list[float], scale: float = 1e3, digits: int = 1) -> str:
    """`median (min-max)` of seconds, shown in ms (or another unit)."""
    m = med(xs) * scale
    lo, hi = min(xs) * scale, max(xs) * scale
    if len(xs) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


# ---------------------------------------------------------------------------
# The fsync floor.


def fsync_floor(directory: Path, lines: int) -> dict:
    """Appends `lines` JSON lines of 300 bytes to a fresh file with
    fdatasync after each (the durable-append floor), then the same without
    sync; per-append seconds."""
    line = ('{"v":1,"seq":1,"at":"2026-11-30T00:00:00.000Z","kind":"seat:reply","data":{"text":"'
            + "x" * 300)
    line = (line[:296] + '"}}\n').encode()
    assert len(line) == 300
    path = directory / "floor.jsonl"
    out = {}
    for mode in ("fdatasync", "none"):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        times = []
        try:
            for _ in range(lines):
                t = time.perf_counter()
                os.write(fd, line)
                if mode == "fdatasync":
                    os.fdatasync(fd)
                times.append(time.perf_counter() - t)
        finally:
            os.close(fd)
        times.sort()
        out[mode] = {
            "mean": sum(times) / len(times),
            "p50": times[len(times) // 2],
            "p99": times[int(len(times) * 0.99)],
        }
    path.unlink()
    return out


def calibrate() -> float:
    """A fixed CPU loop, seconds: how busy the machine is (compare runs)."""
    t = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    return time.perf_counter() - t


# ---------------------------------------------------------------------------
# gavel's side.


class Gavel:
    def __init__(self, binary: Path, work: Path, tmpfs: Path | None):
        self.bin = str(binary)
        self.work = work
        self.tmpfs = tmpfs
        self.workflows: dict[str, Path] = {}
        self.n = 0

    def workflow(self, kind: str, size: int) -> Path:
        key = f"{kind}-{size}"
        if key not in self.workflows:
            self.workflows[key] = getattr(gen, kind.replace("-", "_"))(size, self.work / "wf" / key)
        return self.workflows[key]

    def fresh_workspace(self, on_tmpfs: bool = False) -> Path:
        self.n += 1
        base = self.tmpfs if on_tmpfs and self.tmpfs else self.work
        ws = base / f"ws{self.n:03d}"
        ws.mkdir(parents=True)
        return ws

    def syncs(self, kind: str, size: int) -> int | None:
        """fdatasyncs of one run of the workflow (strace), on disk."""
        wf = self.workflow(kind, size)
        ws = self.fresh_workspace()
        return count_syncs([self.bin, "-q", "run", str(wf), "--workspace", str(ws), "--run-id", "bench"])

    def run(self, kind: str, size: int, on_tmpfs: bool = False) -> dict:
        wf = self.workflow(kind, size)
        ws = self.fresh_workspace(on_tmpfs)
        p = run([self.bin, "-q", "run", str(wf), "--workspace", str(ws), "--run-id", "bench", "--json"])
        outcome = json.loads(p.stdout)
        if outcome["status"] != "pass":
            raise SystemExit(f"gavel {kind} did not pass: {outcome['summary']}")
        record = Path(outcome["record"])
        events = [json.loads(line) for line in record.read_text().splitlines()]
        span = (parse_at(events[-1]["at"]) - parse_at(events[0]["at"])).total_seconds()
        checks_ms = sum(e["data"]["ms"] for e in events if e["kind"] == "check:run")
        return {
            "wall": p.wall, "cpu": p.user + p.sys, "rss_kb": p.rss_kb, "record": record, "workspace": ws,
            "events": len(events), "bytes": record.stat().st_size, "span": span, "checks_ms": checks_ms,
        }


def parse_at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# ---------------------------------------------------------------------------
# LangGraph's side.


class LangGraph:
    def __init__(self, python: Path, work: Path):
        self.python = str(python)
        self.script = str(HERE / "langgraph_work.py")
        self.work = work

    def run(self, *args: str) -> dict:
        p = run([self.python, self.script, *args])
        result = json.loads(p.stdout.strip().splitlines()[-1])
        result.update({"wall": p.wall, "cpu": p.user + p.sys, "rss_kb": p.rss_kb})
        return result

    def syncs(self, *args: str) -> int | None:
        return count_syncs([self.python, self.script, *args])

    def versions(self) -> dict:
        code = ("import importlib.metadata as m, json, sqlite3, platform; print(json.dumps({k: m.version(k) for k in "
                "['langgraph','langgraph-checkpoint','langgraph-checkpoint-sqlite','langchain-core','langsmith']}"
                " | {'python': platform.python_version(), 'sqlite': sqlite3.sqlite_version}))")
        return json.loads(subprocess.run([self.python, "-c", code], check=True, capture_output=True, text=True).stdout)


# ---------------------------------------------------------------------------
# The benchmarks.


def bench(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="gavel-bench-", dir=args.workdir))
    tmpfs = None
    if Path("/dev/shm").is_dir():
        tmpfs = Path(tempfile.mkdtemp(prefix="gavel-bench-", dir="/dev/shm"))
    g = Gavel(args.gavel, work, tmpfs)
    lg = LangGraph(args.python, work)
    r: dict = {"work": str(work), "tmpfs": str(tmpfs) if tmpfs else None}
    started = time.perf_counter()
    r["load_before"] = os.getloadavg()
    r["calibration_before"] = calibrate()
    try:
        # Chain of 1,000 steps, with the fsync floor measured between reps.
        log(f"chain of {CHAIN} steps, {args.reps} interleaved reps (each: floor, gavel durable, LangGraph none, "
            "gavel on tmpfs, LangGraph SqliteSaver)")
        floors, gd, gm, gm100, lgn, lgs = [], [], [], [], [], []
        keep_db = None
        for rep in range(args.reps):
            floors.append(fsync_floor(work, FLOOR_LINES))
            gd.append(g.run("chain", CHAIN))
            lgn.append(lg.run("chain", str(CHAIN), "none"))
            if tmpfs:
                gm.append(g.run("chain", CHAIN, on_tmpfs=True))
                gm100.append(g.run("chain", CHAIN // 10, on_tmpfs=True))
            db = work / f"chain{rep}.sqlite"
            lgs.append(lg.run("chain", str(CHAIN), "sqlite", str(db)))
            if keep_db is None:
                keep_db = db
            else:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
            log(f"  rep {rep + 1}: gavel durable {gd[-1]['wall']:.2f}s, LangGraph none {lgn[-1]['invoke_s']:.2f}s, "
                f"gavel tmpfs {gm[-1]['wall'] if gm else float('nan'):.2f}s, LangGraph sqlite {lgs[-1]['invoke_s']:.2f}s")
        r["floor"] = floors
        r["chain"] = {"gavel_durable": gd, "gavel_tmpfs": gm, "gavel_tmpfs_short": gm100, "lg_none": lgn, "lg_sqlite": lgs}

        # Resume of the 1,000-step run, in a fresh process.
        log("resume of the 1,000-step run (gavel resume, gavel status, LangGraph get_state)")
        record = gd[0]["record"]
        r["resume"] = {
            "gavel_resume": repeat([g.bin, "-q", "resume", str(record)], args.resume_reps),
            "gavel_status": repeat([g.bin, "status", str(record)], args.resume_reps),
            "gavel_resume_rss_kb": run([g.bin, "-q", "resume", str(record)]).rss_kb,
            "gavel_status_rss_kb": run([g.bin, "status", str(record)]).rss_kb,
            "lg": [lg.run("resume", str(CHAIN), str(keep_db)) for _ in range(args.resume_reps_lg)],
        }

        # Fan-out.
        log(f"fan-out of {FAN} x 100 ms, {args.fan_reps} interleaved reps")
        gf, gft, lgf = [], [], []
        for rep in range(args.fan_reps):
            gf.append(g.run("fanout", FAN))
            if tmpfs:
                gft.append(g.run("fanout", FAN, on_tmpfs=True))
            lgf.append(lg.run("fanout", str(FAN), str(work / f"fan{rep}.sqlite")))
        r["fanout"] = {"gavel": gf, "gavel_tmpfs": gft, "lg": lgf}

        # Send-back loop.
        log(f"send-back loop of {LOOP} iterations, {args.reps} interleaved reps")
        gl, lgl_n, lgl_s = [], [], []
        for rep in range(args.reps):
            gl.append(g.run("loop", LOOP))
            lgl_n.append(lg.run("loop", str(LOOP), "none"))
            lgl_s.append(lg.run("loop", str(LOOP), "sqlite", str(work / f"loop{rep}.sqlite")))
            log(f"  rep {rep + 1}: gavel {gl[-1]['wall']:.2f}s, LangGraph none {lgl_n[-1]['invoke_s']:.2f}s, "
                f"sqlite {lgl_s[-1]['invoke_s']:.2f}s")
        r["loop"] = {"gavel": gl, "lg_none": lgl_n, "lg_sqlite": lgl_s}

        # A 100,000-event record, made by a real run, then resumed.
        if not args.skip_big:
            log(f"a real run of >= {BIG_EVENTS} events (builder + 16-reviewer panel loop), then resume and status")
            big = g.run("panel-loop", BIG_EVENTS)
            rec = big["record"]
            r["big"] = {
                "make": big,
                "resume": repeat([g.bin, "-q", "resume", str(rec)], args.big_reps, warmup=1),
                "status": repeat([g.bin, "status", str(rec)], args.big_reps, warmup=1),
                "resume_rss_kb": run([g.bin, "-q", "resume", str(rec)]).rss_kb,
                "status_rss_kb": run([g.bin, "status", str(rec)]).rss_kb,
            }

        # How many fdatasyncs each side makes (strace, one untimed run each).
        log("counting fdatasync/fsync calls with strace (untimed runs)")
        r["syncs"] = {
            "gavel_chain": g.syncs("chain", CHAIN),
            "lg_chain": lg.syncs("chain", str(CHAIN), "sqlite", str(work / "syncs-chain.sqlite")),
            "gavel_loop": g.syncs("loop", LOOP),
            "lg_loop": lg.syncs("loop", str(LOOP), "sqlite", str(work / "syncs-loop.sqlite")),
            "gavel_fanout": g.syncs("fanout", FAN),
        }

        # Start-up.
        log("start-up: gavel --version, python, import langgraph.graph")
        r["startup"] = {
            "gavel_version": repeat([g.bin, "--version"], 200, warmup=10),
            "python_pass": repeat([lg.python, "-c", "pass"], 10, warmup=2),
            "lg_import": repeat([lg.python, "-c", "import langgraph.graph"], 5, warmup=1),
            "gavel_version_rss_kb": run([g.bin, "--version"]).rss_kb,
        }
    finally:
        r["load_after"] = os.getloadavg()
        r["calibration_after"] = calibrate()
        r["seconds"] = time.perf_counter() - started
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            if tmpfs:
                shutil.rmtree(tmpfs, ignore_errors=True)
    r["versions"] = lg.versions()
    return r


# ---------------------------------------------------------------------------
# The report.


def machine(args: argparse.Namespace, r: dict) -> list[str]:
    cpu = "?"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                   if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = "?"
    try:
        kb = int(next(l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal")))
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, StopIteration):
        pass
    fs = subprocess.run(["stat", "-f", "-c", "%T", args.workdir], capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "-C", str(HERE.parent), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip() or "?"
    gv = subprocess.run([str(args.gavel), "--version"], capture_output=True, text=True).stdout.strip()
    v = r["versions"]
    pr = r["chain"]["lg_sqlite"][0].get("pragmas", {})
    return [
        f"- date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; whole run {r['seconds']:.0f} s",
        f"- machine: {os.cpu_count()} vCPU {cpu}, {mem}, {platform.system()} {platform.release()}; "
        f"work dir {args.workdir} ({fs}), tmpfs {r['tmpfs'] or 'none'}",
        f"- load average before/after: {r['load_before'][0]:.2f} / {r['load_after'][0]:.2f}; "
        f"CPU calibration loop before/after: {r['calibration_before'] * 1e3:.0f} / {r['calibration_after'] * 1e3:.0f} ms "
        "(higher = busier machine)",
        f"- gavel: `{gv}` at {rev}, release build",
        f"- LangGraph: langgraph {v['langgraph']}, langgraph-checkpoint {v['langgraph-checkpoint']}, "
        f"langgraph-checkpoint-sqlite {v['langgraph-checkpoint-sqlite']}, langchain-core {v['langchain-core']}, "
        f"langsmith {v['langsmith']}; CPython {v['python']}, SQLite {v['sqlite']} (SqliteSaver's db: journal_mode "
        f"{pr.get('journal_mode', '?')}, synchronous {pr.get('synchronous', '?')} = FULL when 2); tracing off",
        f"- repetitions: {args.reps} (chain, loop), {args.fan_reps} (fan-out), {args.resume_reps} (gavel resume/status), "
        f"{args.resume_reps_lg} (LangGraph resume), {args.big_reps} (100k resume); figures are median (min–max)",
    ]


def report(args: argparse.Namespace, r: dict) -> tuple[str, list[str]]:
    L: list[str] = []
    verdicts: list[str] = []
    floor = [f["fdatasync"]["p50"] for f in r["floor"]]
    floor_mean = [f["fdatasync"]["mean"] for f in r["floor"]]
    floor_p99 = [f["fdatasync"]["p99"] for f in r["floor"]]
    nosync = [f["none"]["mean"] for f in r["floor"]]
    floor_m = med(floor)

    sy = r.get("syncs", {})

    def per(count, n):
        return "?" if count is None else f"{count / n:.2f}"

    c = r["chain"]
    gd_step = [x["wall"] / CHAIN for x in c["gavel_durable"]]
    gd_cpu = [x["cpu"] / CHAIN for x in c["gavel_durable"]]
    gm_step = [x["wall"] / CHAIN for x in c["gavel_tmpfs"]] or [float("nan")]
    lgn_step = [x["invoke_s"] / CHAIN for x in c["lg_none"]]
    lgs_step = [x["invoke_s"] / CHAIN for x in c["lg_sqlite"]]
    ev = c["gavel_durable"][0]["events"]
    ev_step = ev / CHAIN
    gbytes = med([x["bytes"] for x in c["gavel_durable"]])
    lbytes = med([x["db"] + x["db_wal"] for x in c["lg_sqlite"]])

    L += ["| benchmark | gavel | LangGraph | ratio LangGraph / gavel |", "| --- | --- | --- | --- |"]
    L.append(f"| fsync floor: append + fdatasync of a 300 B line, µs (p50; mean {fmt_ms(floor_mean, 1e6, 0)}, "
             f"p99 {fmt_ms(floor_p99, 1e6, 0)}; without sync {fmt_ms(nosync, 1e6, 1)}) | {fmt_ms(floor, 1e6, 0)} | same disk | |")
    L.append(f"| chain of {CHAIN}, durable: per step, µs (gavel: {ev_step:.0f} events a step, {per(sy.get('gavel_chain'), CHAIN)} "
             f"fdatasyncs a step; LangGraph: SqliteSaver `durability=\"sync\"`, {per(sy.get('lg_chain'), CHAIN)} a step) | {fmt_ms(gd_step, 1e6, 0)} | {fmt_ms(lgs_step, 1e6, 0)} | "
             f"{med(lgs_step) / med(gd_step):.1f}× |")
    L.append(f"| chain of {CHAIN}: gavel durable vs LangGraph without checkpointer, per step, µs | {fmt_ms(gd_step, 1e6, 0)} | "
             f"{fmt_ms(lgn_step, 1e6, 0)} | {med(lgn_step) / med(gd_step):.1f}× |")
    L.append(f"| chain of {CHAIN}, no disk: per step, µs (gavel: record and workspace on tmpfs; LangGraph: no checkpointer) | "
             f"{fmt_ms(gm_step, 1e6, 0)} | {fmt_ms(lgn_step, 1e6, 0)} | {med(lgn_step) / med(gm_step):.1f}× |")
    if c.get("gavel_tmpfs_short"):
        short = CHAIN // 10
        gs_step = [x["wall"] / short for x in c["gavel_tmpfs_short"]]
        L.append(f"| chain of {short} (not {CHAIN}), no disk: per step, µs (gavel on tmpfs; LangGraph none at {CHAIN}, "
                 f"for scale: gavel's per-step cost grows with the number of stages) | {fmt_ms(gs_step, 1e6, 0)} | "
                 f"{fmt_ms(lgn_step, 1e6, 0)} | {med(lgn_step) / med(gs_step):.1f}× |")
    L.append(f"| chain of {CHAIN}: whole process, s (gavel: start, parse, run; LangGraph: import, compile, invoke) — durable | "
             f"{fmt_ms([x['wall'] for x in c['gavel_durable']], 1, 2)} | {fmt_ms([x['wall'] for x in c['lg_sqlite']], 1, 2)} | "
             f"{med([x['wall'] for x in c['lg_sqlite']]) / med([x['wall'] for x in c['gavel_durable']]):.1f}× |")
    L.append(f"| chain of {CHAIN}: CPU per step, µs (gavel durable; LangGraph none, whole process / {CHAIN}) | "
             f"{fmt_ms(gd_cpu, 1e6, 0)} | {fmt_ms([x['cpu'] / CHAIN for x in c['lg_none']], 1e6, 0)} | |")
    L.append(f"| chain of {CHAIN}: durable step as a multiple of the fsync floor (p50) | "
             f"{med(gd_step) / floor_m:.1f}× per step ({per(sy.get('gavel_chain'), CHAIN)} syncs) | "
             f"{med(lgs_step) / floor_m:.1f}× per step ({per(sy.get('lg_chain'), CHAIN)} syncs) | |")
    L.append(f"| chain of {CHAIN}: bytes on disk (gavel record; SqliteSaver db + wal) | {gbytes / 1e6:.2f} MB "
             f"({ev} events) | {lbytes / 1e6:.1f} MB | {lbytes / gbytes:.0f}× |")

    f = r["fanout"]
    gfw = [x["wall"] for x in f["gavel"]]
    gfs = [x["span"] for x in f["gavel"]]
    la = [x["async_s"] for x in f["lg"]]
    ls = [x["sync_s"] for x in f["lg"]]
    lq = [x["sqlite_sync_s"] for x in f["lg"]]
    L.append(f"| fan-out {FAN} × 100 ms, wall, ms (gavel: whole `gavel run` process, durable, "
             f"{sy.get('gavel_fanout', '?')} fdatasyncs in all; LangGraph: `ainvoke`, async nodes, "
             f"no checkpointer) | {fmt_ms(gfw)} | {fmt_ms(la)} | {med(la) / med(gfw):.2f}× |")
    L.append(f"| fan-out: gavel run span (run:start → run:end in the record, ms resolution) vs LangGraph sync nodes, "
             f"`max_concurrency={FAN}` | {fmt_ms(gfs, 1e3, 0)} | {fmt_ms(ls)} | {med(ls) / med(gfs):.2f}× |")
    if f.get("gavel_tmpfs"):
        gft = [x["wall"] for x in f["gavel_tmpfs"]]
        L.append(f"| fan-out, no disk: gavel on tmpfs, whole process vs LangGraph async nodes, ms | {fmt_ms(gft)} | "
                 f"{fmt_ms(la)} | {med(la) / med(gft):.2f}× |")
    L.append(f"| fan-out: gavel durable vs LangGraph sync nodes + SqliteSaver `durability=\"sync\"`, ms | {fmt_ms(gfw)} | "
             f"{fmt_ms(lq)} | {med(lq) / med(gfw):.2f}× |")

    lo = r["loop"]
    gli = [x["wall"] / LOOP for x in lo["gavel"]]
    lni = [x["invoke_s"] / LOOP for x in lo["lg_none"]]
    lsi = [x["invoke_s"] / LOOP for x in lo["lg_sqlite"]]
    chk = med([x["checks_ms"] / LOOP for x in lo["gavel"]])
    lev = lo["gavel"][0]["events"]
    L.append(f"| send-back loop of {LOOP}: per iteration, µs (gavel: builder turn + `run` stage + kickback, durable, "
             f"{lev / LOOP:.0f} events, {per(sy.get('gavel_loop'), LOOP)} fdatasyncs and one `test -f` process an iteration, of which the command {chk * 1e3:.0f} µs; "
             f"LangGraph: 2-node conditional loop, no checkpointer) | {fmt_ms(gli, 1e6, 0)} | {fmt_ms(lni, 1e6, 0)} | "
             f"{med(lni) / med(gli):.2f}× |")
    L.append(f"| send-back loop of {LOOP}: durable, per iteration, µs (LangGraph: SqliteSaver `durability=\"sync\"`, "
             f"{per(sy.get('lg_loop'), LOOP)} fsyncs an iteration) | "
             f"{fmt_ms(gli, 1e6, 0)} | {fmt_ms(lsi, 1e6, 0)} | {med(lsi) / med(gli):.2f}× |")

    rs = r["resume"]
    lgr_proc = [x["wall"] for x in rs["lg"]]
    lgr_state = [x["compile_s"] + x["get_state_s"] for x in rs["lg"]]
    L.append(f"| resume of the {CHAIN}-step run in a fresh process, ms (gavel: `gavel resume` replays the finished run and "
             f"reports; LangGraph: import, rebuild + compile, `get_state`) | {fmt_ms(rs['gavel_resume'])} | "
             f"{fmt_ms(lgr_proc)} | {med(lgr_proc) / med(rs['gavel_resume']):.0f}× |")
    L.append(f"| the same without LangGraph's imports (rebuild + compile + `get_state`) vs `gavel status`, ms | "
             f"{fmt_ms(rs['gavel_status'])} | {fmt_ms(lgr_state)} | {med(lgr_state) / med(rs['gavel_status']):.0f}× |")
    if "big" in r:
        b = r["big"]
        L.append(f"| resume of a {b['make']['events']:,}-event record ({b['make']['bytes'] / 1e6:.1f} MB, made by a real "
                 f"{b['make']['wall']:.0f} s run), `gavel resume`, ms | {fmt_ms(b['resume'])} | — | |")
        L.append(f"| the same record, `gavel status` (read + fold), ms | {fmt_ms(b['status'])} | — | |")

    st = r["startup"]
    L.append(f"| start-up, ms (`gavel --version`; `python -c \"import langgraph.graph\"`, `python -c pass` "
             f"{fmt_ms(st['python_pass'])}) | {fmt_ms(st['gavel_version'], 1e3, 2)} | {fmt_ms(st['lg_import'], 1e3, 0)} | "
             f"{med(st['lg_import']) / med(st['gavel_version']):.0f}× |")
    rss = lambda xs: med([x["rss_kb"] for x in xs]) / 1024  # noqa: E731
    L.append(f"| peak RSS, MiB: chain durable | {rss(c['gavel_durable']):.1f} | {rss(c['lg_sqlite']):.1f} | "
             f"{rss(c['lg_sqlite']) / rss(c['gavel_durable']):.0f}× |")
    L.append(f"| peak RSS, MiB: chain, no checkpointer / tmpfs | {rss(c['gavel_tmpfs']) if c['gavel_tmpfs'] else float('nan'):.1f} | "
             f"{rss(c['lg_none']):.1f} | |")
    L.append(f"| peak RSS, MiB: loop durable | {rss(lo['gavel']):.1f} | {rss(lo['lg_sqlite']):.1f} | |")
    L.append(f"| peak RSS, MiB: fan-out (LangGraph: the process running all three variants) | {rss(f['gavel']):.1f} | "
             f"{rss(f['lg']):.1f} | |")
    L.append(f"| peak RSS, MiB: resume (gavel resume / status of the {CHAIN}-step run) | "
             f"{rs['gavel_resume_rss_kb'] / 1024:.1f} / {rs['gavel_status_rss_kb'] / 1024:.1f} | "
             f"{rss(rs['lg']):.1f} | |")
    if "big" in r:
        L.append(f"| peak RSS, MiB: resume / status of the {r['big']['make']['events']:,}-event record | "
                 f"{r['big']['resume_rss_kb'] / 1024:.1f} / {r['big']['status_rss_kb'] / 1024:.1f} | — | |")

    # Targets.
    def verdict(name: str, measured: str, target: str, met: bool, miss: str) -> None:
        verdicts.append(f"| {name} | {measured} | {target} | {'met' if met else 'missed: ' + miss} |")

    ratio = med(lgn_step) / med(gm_step)
    verdict("per step in memory vs LangGraph without checkpointer",
            f"{ratio:.1f}× less ({med(gm_step) * 1e6:.0f} µs vs {med(lgn_step) * 1e6:.0f} µs)", "≥ 100×",
            ratio >= TARGET_INMEM_RATIO, f"{TARGET_INMEM_RATIO / ratio:.0f}× short")
    mult = med(gd_step) / floor_m
    verdict("durable step vs fsync floor", f"{mult:.1f}× ({med(gd_step) * 1e6:.0f} µs vs {floor_m * 1e6:.0f} µs; "
            f"{per(sy.get('gavel_chain'), CHAIN)} fdatasyncs a step)", "≤ 1.5×",
            mult <= TARGET_DURABLE_FLOOR, f"{mult / TARGET_DURABLE_FLOOR:.1f}× over")
    fw = med(gfw) * 1e3
    on_tmpfs = f"; {med([x['wall'] for x in f['gavel_tmpfs']]) * 1e3:.1f} ms on tmpfs" if f.get("gavel_tmpfs") else ""
    verdict("fan-out 16 × 100 ms wall", f"{fw:.1f} ms whole process, durable ({med(gfs) * 1e3:.0f} ms run span{on_tmpfs})",
            "≤ 105 ms",
            fw <= TARGET_FAN_MS, f"by {fw - TARGET_FAN_MS:.1f} ms")
    if "big" in r:
        rm = med(r["big"]["resume"]) * 1e3
        verdict(f"resume of a {r['big']['make']['events']:,}-event record", f"{rm:.0f} ms (`gavel status`: "
                f"{med(r['big']['status']) * 1e3:.0f} ms)", "< 200 ms", rm < TARGET_RESUME_MS,
                f"{rm / TARGET_RESUME_MS:.1f}× over")
    vm = med(st["gavel_version"]) * 1e3
    verdict("`gavel --version`", f"{vm:.2f} ms", "< 10 ms", vm < TARGET_VERSION_MS, f"by {vm - TARGET_VERSION_MS:.1f} ms")
    br = lbytes / gbytes
    verdict(f"record bytes, {CHAIN}-step chain", f"1/{br:.0f} of SqliteSaver ({gbytes / 1e6:.2f} MB vs {lbytes / 1e6:.1f} MB)",
            "≤ 1/20", br >= TARGET_BYTES_RATIO, f"only 1/{br:.1f}")

    out = ["## Figures", "", *machine(args, r), "", *L, "", "## The issue's targets", "",
           "| target | measured | wanted | verdict |", "| --- | --- | --- | --- |", *verdicts, ""]
    return "\n".join(out), L + [""] + verdicts


def jsonable(x):
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    return x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gavel", type=Path, required=True, help="the gavel release binary")
    ap.add_argument("--python", type=Path, required=True, help="the python of the LangGraph venv")
    ap.add_argument("--workdir", default=tempfile.gettempdir(), help="where runs and records go (a disk, not tmpfs)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fan-reps", type=int, default=7)
    ap.add_argument("--resume-reps", type=int, default=10)
    ap.add_argument("--resume-reps-lg", type=int, default=5)
    ap.add_argument("--big-reps", type=int, default=5)
    ap.add_argument("--skip-big", action="store_true", help="skip the 100,000-event record (about a minute)")
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    args = ap.parse_args()

    results = bench(args)
    text, table = report(args, results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(
        "# Latest side-by-side figures\n\nWritten by `bench/run.sh` (see `bench/README.md` for what each row "
        "measures). Do not edit by hand.\n\n" + text)
    (args.out / "latest.json").write_text(json.dumps(jsonable(results), indent=1) + "\n")
    readme = HERE / "README.md"
    if readme.exists():
        body = readme.read_text()
        start, end = "<!-- results:start -->", "<!-- results:end -->"
        if start in body and end in body:
            head, rest = body.split(start, 1)
            _, tail = rest.split(end, 1)
            nested = text.replace("## ", "### ")  # under the README's own "## Latest figures"
            readme.write_text(f"{head}{start}\n{nested}\n{end}{tail}")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
