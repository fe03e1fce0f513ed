"""LangGraph's side of the side-by-side benchmark (run with the bench venv's
python). Each call does one workload in this fresh process and prints one
JSON object on stdout: the phases it timed, in seconds.

    python langgraph_work.py chain N none|memory|sqlite DB
    python langgraph_work.py loop N none|sqlite DB
    python langgraph_work.py fanout K
    python langgraph_work.py resume N DB

`sqlite` is LangGraph's SqliteSaver on DB with `durability="sync"` (each
superstep's checkpoint committed before the next step: the mode comparable
to gavel's fdatasync per event). Tracing stays off.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import asyncio  # noqa: E402
import json  # noqa: E402
import operator  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import sys  # noqa: E402
from typing import Annotated, TypedDict  # noqa: E402

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")

from langgraph.graph import END, START, StateGraph  # noqa: E402

IMPORT_S = time.perf_counter() - T0


class Count(TypedDict):
    n: int


class Joined(TypedDict):
    done: Annotated[list, operator.add]


def step(state: Count) -> dict:
    return {"n": state["n"] + 1}


def chain_graph(n: int) -> StateGraph:
    graph = StateGraph(Count)
    previous = START
    for i in range(1, n + 1):
        name = f"s{i:04d}"
        graph.add_node(name, step)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph


def saver(db: str):
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    checkpointer = SqliteSaver(conn)
    checkpointer.setup()
    return conn, checkpointer


def pragmas(conn: sqlite3.Connection) -> dict:
    return {
        "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
        "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0],
        "sqlite": sqlite3.sqlite_version,
    }


def db_bytes(db: str) -> dict:
    sizes = {}
    for suffix in ("", "-wal", "-shm"):
        path = db + suffix
        sizes["db" + suffix.replace("-", "_")] = os.path.getsize(path) if os.path.exists(path) else 0
    return sizes


def compile_with(graph: StateGraph, mode: str, db: str | None):
    conn = None
    if mode == "none":
        app = graph.compile()
    elif mode == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        app = graph.compile(checkpointer=InMemorySaver())
    elif mode == "sqlite":
        conn, checkpointer = saver(db)
        app = graph.compile(checkpointer=checkpointer)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return app, conn


def run_chain(n: int, mode: str, db: str | None) -> dict:
    t = time.perf_counter()
    graph = chain_graph(n)
    app, conn = compile_with(graph, mode, db)
    compile_s = time.perf_counter() - t
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": n + 10}
    kwargs = {"durability": "sync"} if mode != "none" else {}
    t = time.perf_counter()
    out = app.invoke({"n": 0}, config, **kwargs)
    invoke_s = time.perf_counter() - t
    assert out["n"] == n, out
    result = {"compile_s": compile_s, "invoke_s": invoke_s, "steps": n}
    if conn is not None:
        result["pragmas"] = pragmas(conn)
        conn.close()
        result.update(db_bytes(db))
    return result


def run_loop(n: int, mode: str, db: str | None) -> dict:
    """A two-node loop: `build` counts, `check` routes back to `build` until
    the count reaches n (one iteration = two supersteps)."""
    graph = StateGraph(Count)
    graph.add_node("build", step)
    graph.add_node("check", lambda state: {})
    graph.add_edge(START, "build")
    graph.add_edge("build", "check")
    graph.add_conditional_edges("check", lambda s: END if s["n"] >= n else "build", ["build", END])
    t = time.perf_counter()
    app, conn = compile_with(graph, mode, db)
    compile_s = time.perf_counter() - t
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * n + 10}
    kwargs = {"durability": "sync"} if mode != "none" else {}
    t = time.perf_counter()
    out = app.invoke({"n": 0}, config, **kwargs)
    invoke_s = time.perf_counter() - t
    assert out["n"] == n, out
    result = {"compile_s": compile_s, "invoke_s": invoke_s, "iterations": n}
    if conn is not None:
        conn.close()
        result.update(db_bytes(db))
    return result


def fan_graph(k: int, node) -> StateGraph:
    graph = StateGraph(Joined)
    names = [f"w{i:02d}" for i in range(1, k + 1)]
    for i, name in enumerate(names):
        graph.add_node(name, node(i))
        graph.add_edge(START, name)
    graph.add_node("join", lambda state: {})
    graph.add_edge(names, "join")
    graph.add_edge("join", END)
    return graph


def run_fanout(k: int, db: str | None) -> dict:
    """16 nodes sleeping 100 ms each, then a join: async nodes, sync nodes
    with `max_concurrency = k` (the default pool has 6 workers on 2 cores,
    which would run them in three waves), and sync nodes with SqliteSaver."""

    def sync_node(i):
        def node(state):
            time.sleep(0.1)
            return {"done": [i]}

        return node

    def async_node(i):
        async def node(state):
            await asyncio.sleep(0.1)
            return {"done": [i]}

        return node

    out = {}
    app = fan_graph(k, async_node).compile()

    async def go():
        return await app.ainvoke({"done": []}, {"recursion_limit": 100})

    asyncio.run(go())  # warm-up
    t = time.perf_counter()
    res = asyncio.run(go())
    out["async_s"] = time.perf_counter() - t
    assert len(res["done"]) == k

    app = fan_graph(k, sync_node).compile()
    config = {"max_concurrency": k, "recursion_limit": 100}
    app.invoke({"done": []}, config)  # warm-up
    t = time.perf_counter()
    res = app.invoke({"done": []}, config)
    out["sync_s"] = time.perf_counter() - t
    assert len(res["done"]) == k

    if db:
        conn, checkpointer = saver(db)
        app = fan_graph(k, sync_node).compile(checkpointer=checkpointer)
        for rep in range(2):  # the first is a warm-up
            config = {"configurable": {"thread_id": f"fan{rep}"}, "max_concurrency": k, "recursion_limit": 100}
            t = time.perf_counter()
            res = app.invoke({"done": []}, config, durability="sync")
            out["sqlite_sync_s"] = time.perf_counter() - t
        conn.close()
    return out


def run_resume(n: int, db: str) -> dict:
    """A fresh process takes the finished n-step chain up again: rebuild and
    compile the graph on the saved checkpoints, then read the latest state."""
    t = time.perf_counter()
    graph = chain_graph(n)
    app, conn = compile_with(graph, "sqlite", db)
    compile_s = time.perf_counter() - t
    t = time.perf_counter()
    state = app.get_state({"configurable": {"thread_id": "bench"}})
    get_state_s = time.perf_counter() - t
    assert state.values["n"] == n, state.values
    conn.close()
    return {"compile_s": compile_s, "get_state_s": get_state_s}


def main(argv: list[str]) -> None:
    kind = argv[1]
    if kind == "chain":
        result = run_chain(int(argv[2]), argv[3], argv[4] if len(argv) > 4 else None)
    elif kind == "loop":
        result = run_loop(int(argv[2]), argv[3], argv[4] if len(argv) > 4 else None)
    elif kind == "fanout":
        result = run_fanout(int(argv[2]), argv[3] if len(argv) > 3 else None)
    elif kind == "resume":
        result = run_resume(int(argv[2]), argv[3])
    else:
        raise SystemExit(__doc__)
    result["import_s"] = IMPORT_S
    result["process_s"] = time.perf_counter() - T0
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
