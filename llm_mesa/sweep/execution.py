"""How a sweep's games are played: here in threads, or in a pool of worker processes.

Games go to worker processes in batches (per-task overhead would otherwise
dominate games that last a tenth of a second); each process keeps its own LLM
runtime and one record/replay store shared by its threads. Whatever the way, a
batch whose game fails keeps the games that finished, and the first error is
raised after they are written.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from llm_mesa import play
from llm_mesa.games import GameResult, PlayRequest
from llm_mesa.llm import stopping
from llm_mesa.registry import get_game

#: environment variables of the BLAS libraries numpy and scipy may load
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


@dataclass(frozen=True)
class GameTask:
    """One game of the grid: its key and how to build it (picklable, for workers)."""

    game: str
    condition: str
    policy: str  # the label in the results
    seed: int
    parameters: dict[str, Any]
    policy_spec: str  # a rule policy spec, or "llm" with ``endpoint`` set
    endpoint: Any = None  # an llm_mesa.llm.endpoint.Endpoint for LLM policies

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.condition, self.policy, self.seed)

    def request(self, store: StoreOptions | None = None, tables: Sequence[str] = ()) -> PlayRequest:
        return PlayRequest(self.parameters, self.policy_spec, self.seed, tuple(tables), self.endpoint,
                           _process_store(store) if self.endpoint is not None else None)

    def keyed(self, result: GameResult, wall_s: float) -> GameResult:
        """The row and tables with the game's key; an LLM game's row judged by the core (``invalid``),
        whatever the game's own play wrote."""
        key = {"condition": self.condition, "policy": self.policy, "seed": self.seed}
        row = {**key, **{k: v for k, v in result.row.items() if k not in key}, "wall_s": wall_s}
        if self.endpoint is not None:
            from llm_mesa.decisions import judge

            game = get_game(self.game)
            own = {k: v for k, v in self.parameters.items() if k in game.parameters}  # not a model's extras
            judge(row, play.failure_share(game, game.parameters.validate(own, complete=True)))
        return GameResult(row, {name: df.assign(**key) for name, df in result.tables.items()})


@dataclass(frozen=True)
class StoreOptions:
    """Where worker processes record LLM calls: one SQLite file shared by all."""

    path: str | None
    mode: str = "record"


_stores: dict[tuple[str, str, int], Any] = {}
_stores_lock = threading.Lock()


def _process_store(options: StoreOptions | None):
    """This process's ResponseStore for ``options`` (one per process, shared by its threads)."""
    if options is None or options.path is None or options.mode == "off":
        return None
    from llm_mesa.llm.store import ResponseStore

    key = (options.path, options.mode, os.getpid())
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = ResponseStore(options.path, options.mode)
        return store


def close_process_stores() -> None:
    with _stores_lock:
        for key in [k for k in _stores if k[2] == os.getpid()]:
            _stores.pop(key).close()


def play_game(task: GameTask, store: StoreOptions | None = None, tables: Sequence[str] = ()) -> GameResult:
    """Play one game to its end; its summary row (with the key) and the asked tables."""
    started = time.perf_counter()
    return task.keyed(play.play(get_game(task.game), task.request(store, tables)), time.perf_counter() - started)


def _play_together(tasks: list[GameTask], store: StoreOptions | None,
                   tables: tuple[str, ...]) -> tuple[list[GameResult], BaseException | None]:
    """Games played together (``llm_mesa.play.play_batch``), else one by one: those that finished, the first error."""
    started = time.perf_counter()
    try:
        results = play.play_batch(get_game(tasks[0].game), [t.request(store, tables) for t in tasks])
        wall_s = (time.perf_counter() - started) / len(tasks)
        return [t.keyed(r, wall_s) for t, r in zip(tasks, results, strict=True)], None
    except Exception as exc:  # noqa: BLE001  (replayed one by one, to keep the finished games)
        if len(tasks) == 1:
            return [], exc
    results: list[GameResult] = []
    for task in tasks:
        try:
            results.append(play_game(task, store, tables))
        except Exception as exc:  # noqa: BLE001  (reported after the games that finished)
            return results, exc
    return results, None


_blas_limit: Any = None


def limit_blas_threads(threads: int | None):
    """Cap BLAS threads (numpy/scipy) at ``threads`` while a sweep runs.

    Games run in parallel at the game level; on a loaded machine, BLAS thread
    pools in every game (scipy's optimiser behind network layouts) oversubscribe
    the cores and made 36-agent games about ten times slower here. Uses
    ``threadpoolctl`` when installed; otherwise does nothing.
    """
    if threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads)


def _init_worker(blas_threads: int | None) -> None:
    global _blas_limit
    _blas_limit = limit_blas_threads(blas_threads)  # kept for the worker's life
    # a worker stops spending when its sweep does: the parent sends SIGTERM (``_stop_workers``); a Ctrl-C
    # reaches the parent, which says so, rather than breaking the pool in every worker at once
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.request_stop())
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Tell the pool's worker processes to stop spending (their SIGTERM handler: ``_init_worker``)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive() and process.pid is not None:
            os.kill(process.pid, signal.SIGTERM)


def _play_batch(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...],
                games_in_flight: int) -> tuple[list[GameResult], BaseException | None]:
    """A worker's share: a batch played together, or ``games_in_flight`` games at a time in threads.

    Returns the games that finished and the first error (one failure never loses the others).
    """
    try:
        if games_in_flight <= 1 or len(tasks) == 1:  # together; stops at its first failure, like a sequential sweep
            return _play_together(tasks, store, tables)
        with ThreadPoolExecutor(min(games_in_flight, len(tasks)), thread_name_prefix="game") as pool:
            outcomes = list(pool.map(lambda task: _play_together([task], store, tables), tasks))
        return [r for done, _ in outcomes for r in done], next((e for _, e in outcomes if e is not None), None)
    finally:
        close_process_stores()


@contextlib.contextmanager
def blas_threads_in_children(threads: int | None) -> Iterator[None]:
    """Cap BLAS threads in the worker processes started inside this block.

    The cap must be in the environment before a worker imports numpy: OpenBLAS
    sizes its pool when it loads (it ran 2 threads per worker and made a 120-game
    sweep 2.7x slower). Spawned workers inherit the variables set here.
    """
    if threads is None:
        yield
        return
    saved = {name: os.environ.get(name) for name in BLAS_VARIABLES}
    os.environ.update(dict.fromkeys(BLAS_VARIABLES, str(threads)))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _deliver(done: Iterable[Any], finished: Callable[[Sequence[GameResult]], None], batched: bool) -> None:
    """Write every game that finished well, then raise the first error among the rest."""
    results: list[GameResult] = []
    error: BaseException | None = None
    for future in done:
        if future.cancelled():
            continue
        exc = future.exception()
        if exc is not None:
            error = error or exc
        elif batched:
            finished_games, batch_error = future.result()
            results.extend(finished_games)
            error = error or batch_error
        else:
            results.append(future.result())
    finished(results)
    if error is not None:
        raise error


def run_here(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...], games_in_flight: int,
             finished: Callable[[Sequence[GameResult]], None], batch_size: int | None = None) -> None:
    """Games in this process: in chunks the game plays together, or ``games_in_flight`` at once in threads."""
    if games_in_flight == 1:  # in chunks the game plays together (llm_mesa.play.batch_size; 1: each written as it ends)
        while tasks:
            size = max(1, min(batch_size or len(tasks), play.batch_size(get_game(tasks[0].game), tasks[0].request())))
            chunk, tasks = tasks[:size], tasks[size:]
            results, error = _play_together(chunk, store, tables)
            finished(results)
            if error is not None:
                raise error
        return
    pool = ThreadPoolExecutor(games_in_flight, thread_name_prefix="game")
    waiting = iter(tasks)

    def start(count: int) -> set[Any]:  # a game starts as one ends and is written: the breaker sees it first
        return {pool.submit(play_game, task, store, tables) for task in itertools.islice(waiting, count)}

    try:
        _drain(start(games_in_flight), finished, batched=False, more=start)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_in_processes(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...],
                     games_in_flight: int, processes: int, batch_size: int | None,
                     blas_threads: int | None, finished: Callable[[Sequence[GameResult]], None]) -> None:
    """Batches of games on a pool of spawned worker processes of this machine."""
    if not tasks:
        return
    batches = _batches(tasks, processes, batch_size)
    with blas_threads_in_children(blas_threads):  # set before the workers start, so before they load numpy
        pool = ProcessPoolExecutor(min(processes, len(batches)), mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(blas_threads,))
        for _ in range(min(processes, len(batches))):
            pool.submit(int)  # start the workers now, while the variables are set
    try:
        _run_batches(pool, batches, store, tables, games_in_flight, finished, on_stop=lambda: _stop_workers(pool))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_on_dask(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...], games_in_flight: int,
                executor: str, batch_size: int | None, blas_threads: int | None,
                finished: Callable[[Sequence[GameResult]], None]) -> None:
    """Batches of games on a Dask ``distributed`` cluster (``dask://HOST:PORT`` or ``local-cluster:N``).

    Each worker process keeps its own LLM runtime and store connection (the store
    path must be reachable from every worker, e.g. on a shared file system); the
    results come back here and are written exactly as a local run writes them.
    Batches, not single games: Dask's per-task overhead is about a millisecond.
    """
    if not tasks:
        return
    from distributed import Client, LocalCluster

    cluster = None
    with blas_threads_in_children(blas_threads):
        if executor.startswith("local-cluster:"):
            workers = int(executor.split(":", 1)[1])
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client("tcp://" + executor.split("://", 1)[1], timeout=30)
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        _run_batches(client.get_executor(), _batches(tasks, workers, batch_size), store, tables, games_in_flight,
                     finished)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _batches(tasks: list[GameTask], workers: int, batch_size: int | None) -> list[list[GameTask]]:
    size = batch_size or max(1, min(25, math.ceil(len(tasks) / (workers * 4))))
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


def _run_batches(executor: Any, batches: list[list[GameTask]], store: StoreOptions | None, tables: tuple[str, ...],
                 games_in_flight: int, finished: Callable[[Sequence[GameResult]], None],
                 on_stop: Callable[[], None] | None = None) -> None:
    """Submit every batch; write each as it finishes; on a stop, keep the batches already running."""
    _drain({executor.submit(_play_batch, b, store, tables, games_in_flight) for b in batches}, finished, batched=True,
           on_stop=on_stop)


def stops_spending(exc: BaseException) -> bool:
    """Does ``exc`` end the sweep's spending at once (an interrupt, a tripped circuit breaker), rather than
    let the games in flight play to their ends (one game's error: the others are kept)?"""
    return isinstance(exc, KeyboardInterrupt) or getattr(exc, "stops_spending", False)


def _drain(pending: set[Any], finished: Callable[[Sequence[GameResult]], None], batched: bool,
           on_stop: Callable[[], None] | None = None, more: Callable[[int], set[Any]] | None = None) -> None:
    """Write each future's games as it finishes (``more(n)``: then start up to ``n`` more, one for each that
    ended); on an error, start nothing more but keep the games that finish; on an interrupt or a tripped
    breaker, also stop spending (``llm_mesa.llm.stopping``): the games in flight end within the grace,
    unfinished, and are left out."""
    try:
        while pending:  # woken every stopping.SIGNAL_POLL_S: a signal the kernel gave a game's thread reaches this one
            done, pending = wait(pending, timeout=stopping.SIGNAL_POLL_S, return_when=FIRST_COMPLETED)
            _deliver(done, finished, batched=batched)
            if more is not None and done:
                pending |= more(len(done))
    except BaseException as exc:
        stop = stops_spending(exc)
        if stop:
            stopping.request_stop()
            if on_stop is not None:
                on_stop()
        for future in pending:
            future.cancel()
        running = [f for f in pending if not f.cancelled()]
        try:
            if running:
                stopping.waited_for(running)  # a second interrupt reaches this thread too
                done = running
                try:
                    _deliver(done, finished, batched=batched)
                except BaseException:
                    pass  # the first error is the one to report
        except KeyboardInterrupt:  # a second interrupt while the games in flight stop: no grace
            stopping.request_stop()
            raise
        if stop:
            stopping.clear_stop()
        raise


EXECUTOR_FORMS = "local, local-cluster:N or dask://HOST:PORT"


def check_executor(executor: str) -> str:
    """``local``, ``local-cluster:N`` (N >= 1) or ``dask://HOST:PORT``; anything else is one error line."""
    from .columns import SweepError

    text = executor.strip()
    if text == "local":
        return text
    if text.startswith("local-cluster:"):
        count = text.split(":", 1)[1]
        if count.isdigit() and 1 <= int(count) <= 1024:
            return text
    elif text.startswith(("dask://", "tcp://")):
        host, _, port = text.split("://", 1)[1].rpartition(":")
        if host and port.isdigit() and 0 < int(port) < 65536:
            return "dask://" + text.split("://", 1)[1]
    raise SweepError(f"--executor {executor!r}: use {EXECUTOR_FORMS}")
