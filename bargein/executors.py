"""Where a CPU stage's items run: local worker processes (the default) or a Ray cluster.

The runner owns caching, ordering, seeding and failure records; an executor only turns
``(stage, item)`` into the stage's encoded output on some process, and hands it back::

    with using_executor(ExecutorConfig(kind="ray", ray_address="127.0.0.1:6379")):
        render_conversations(convs, workdir=..., seed=7)      # the same code, on the cluster

Both executors call the same worker function with the same per-item seed (from the stage name,
the global seed and the item id), so a Ray build is byte-identical to a local one. Backends are
resolved by name inside each worker from the serialisable stage config and the registry state
the driver ships along, never from a process global of the driver.

I/O stages (LLM calls) stay on the driver under asyncio whatever the executor: they are bound by
the provider, not by cores, and keeping them in one process is what holds the provider's rate
limits, the spend ledger and the budget cap exactly (one limiter for the whole build).
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bargein.errors import BackendUnavailable, ConfigError

log = logging.getLogger("bargein.executors")


class ExecutorConfig(BaseModel):
    """``executor: local | ray`` and how to reach the cluster. Execution only: it never changes
    an output byte, so it is not part of any cache key or of the release provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(None, description="ray://HOST:PORT, HOST:PORT or 'auto'; "
                                                      "default: $RAY_ADDRESS, else a local Ray")
    node_ip_address: str | None = Field(None, description="this machine's address in the "
                                        "cluster when it is not the auto-detected one")
    max_in_flight: int | None = Field(None, ge=1, description="tasks queued on the cluster at "
                                                             "once (default: 2 x cluster CPUs)")
    task_retries: int = Field(3, ge=0, description="re-runs of a task whose worker or node died")


_CURRENT: contextvars.ContextVar[ExecutorConfig | None] = contextvars.ContextVar(
    "bargein_executor", default=None)


def current() -> ExecutorConfig:
    """The executor in force: the innermost :func:`using_executor`, else ``$BARGEIN_EXECUTOR``."""
    cfg = _CURRENT.get()
    if cfg is not None:
        return cfg
    kind = os.environ.get("BARGEIN_EXECUTOR", "local").strip() or "local"
    if kind not in ("local", "ray"):
        raise ConfigError(f"BARGEIN_EXECUTOR={kind!r} is not an executor. Fix: set it to "
                          "'local' or 'ray' (or unset it).")
    return ExecutorConfig(kind=kind)


@contextmanager
def using_executor(cfg: ExecutorConfig | None) -> Iterator[ExecutorConfig]:
    token = _CURRENT.set(cfg)
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


# ---- Ray ---------------------------------------------------------------------------------

def _ray():
    try:
        import ray
    except ImportError:
        raise BackendUnavailable("executor 'ray' needs Ray. Fix: pip install 'bargein[ray]'") from None
    return ray


def ensure_ray(cfg: ExecutorConfig):
    """Connect to the cluster once per process (``ray.init`` is idempotent only if guarded)."""
    ray = _ray()
    if not ray.is_initialized():
        address = cfg.ray_address or os.environ.get("RAY_ADDRESS") or None
        kw: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False,
                              "logging_level": logging.WARNING,
                              "runtime_env": {"env_vars": _forwarded_env()}}
        if cfg.node_ip_address:
            kw["_node_ip_address"] = cfg.node_ip_address
        if address is None:
            kw["include_dashboard"] = False
        try:
            ray.init(address=address, **kw)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(f"cannot reach the Ray cluster at {address}: "
                              f"{str(e).splitlines()[0]}. Fix: start it (`ray start --head`), "
                              "check executor.ray_address / $RAY_ADDRESS, and export the "
                              "cluster's RAY_AUTH_TOKEN if it uses token auth.") from None
        log.info("connected to Ray at %s with %s CPUs", address or "(local)",
                 ray.cluster_resources().get("CPU"))
    return ray


def _forwarded_env() -> dict[str, str]:
    """What workers on other nodes need to behave like local workers (never secrets)."""
    keep = ("HF_HUB_OFFLINE", "HF_HOME", "BARGEIN_PROGRESS", "PYTHONHASHSEED")
    return {k: os.environ[k] for k in keep if k in os.environ}


def run_on_ray(cfg: ExecutorConfig, task: Callable[..., tuple[str, str]], stage, items,
               todo: list[int], seed: int, workdir: str, factory, registry_state,
               done: Callable[[int, str | None, Any], None],
               on_crash: Callable[[int, BaseException], None]) -> None:
    """Submit every item of ``todo`` as a Ray task running ``task`` (the runner's worker call)
    with bounded in-flight work (backpressure); hand each result to ``done`` as it arrives. A
    task whose worker or node died is retried by Ray (``task_retries``); one that still fails
    becomes that item's failure record."""
    ray = ensure_ray(cfg)
    remote = ray.remote(num_cpus=1, max_retries=cfg.task_retries, retry_exceptions=False)(task)
    cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
    limit = cfg.max_in_flight or max(2, 2 * cpus)
    stage_ref = ray.put(stage)
    state_ref = ray.put(registry_state)
    factory_ref = ray.put(factory)
    key = stage.fingerprint()
    queue = list(todo)
    pending: dict[Any, int] = {}
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                n = queue.pop(0)
                ref = remote.remote(stage_ref, items[n], seed, workdir, state_ref, factory_ref, key)
                pending[ref] = n
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                n = pending.pop(ref)
                try:
                    status, payload = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a task lost for good fails its item
                    on_crash(n, exc)
                    continue
                done(n, payload if status == "ok" else None, None if status == "ok" else payload)
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
