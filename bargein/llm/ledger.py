"""The cost ledger: raw token usage per (provider, model, agent), priced from a versioned table.

An unknown model is *unpriced*: its tokens are kept, its cost is ``"unpriced"``, never 0. The
ledger is written to ``<workdir>/llm_ledger.json`` and accumulates across runs of a workdir; all
clients of one workdir in a process share it (:func:`ledger_for`). ``spend_str()`` and the budget
cap look at this run only.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from bargein.errors import BudgetExceeded, ConfigError
from bargein.llm.base import Usage
from bargein.cache import flush_writes, write_behind

_SNAPSHOT = re.compile(r"^(?P<base>.+?)(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")
UNPRICED = "unpriced"


@dataclass(frozen=True)
class Price:
    input_per_m: float
    output_per_m: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_m + output_tokens * self.output_per_m) / 1e6


class PriceTable:
    """USD per 1M tokens by provider and model, with a version and a date."""

    def __init__(self, prices: dict[str, dict[str, Price]], version: str, date: str):
        self.prices, self.version, self.date = prices, str(version), str(date)

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        if path is None:
            text = (resources.files("bargein") / "pricing" / "prices.yaml").read_text(encoding="utf-8")
            where = "bargein/pricing/prices.yaml"
        else:
            text, where = Path(path).read_text(encoding="utf-8"), str(path)
        try:
            data = yaml.safe_load(text)
            prices = {prov: {m: Price(float(p["input"]), float(p["output"])) for m, p in models.items()}
                      for prov, models in data["providers"].items()}
            return cls(prices, data["version"], data["date"])
        except (KeyError, TypeError, ValueError, yaml.YAMLError) as e:
            raise ConfigError(f"{where}: not a valid price table ({e}). Each entry needs "
                              "'MODEL: {input: USD_PER_1M, output: USD_PER_1M}' under providers.PROVIDER, "
                              "plus 'version' and 'date'.") from e

    def with_overrides(self, overrides: dict[str, Any] | None, provider: str) -> PriceTable:
        """A copy with ``{model: {"input": x, "output": y}}`` prices added for ``provider``."""
        if not overrides:
            return self
        prices = {p: dict(m) for p, m in self.prices.items()}
        for model, p in overrides.items():
            try:
                prices.setdefault(provider, {})[model] = Price(float(p["input"]), float(p["output"]))
            except (KeyError, TypeError, ValueError) as e:
                raise ConfigError(f"prices[{model!r}] = {p!r}: expected {{'input': USD_PER_1M, "
                                  f"'output': USD_PER_1M}}") from e
        return PriceTable(prices, f"{self.version}+overrides", self.date)

    def lookup(self, provider: str, model: str) -> Price | None:
        table = self.prices.get(provider, {})
        if model in table:
            return table[model]
        m = _SNAPSHOT.match(model)
        if m and m.group("base") in table:
            return table[m.group("base")]
        return table.get("*")


@dataclass
class _Entry:
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False

    def add(self, other: _Entry) -> None:
        self.calls += other.calls
        self.cached_calls += other.cached_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.unpriced = self.unpriced or other.unpriced


_LEDGERS: dict[Path, CostLedger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger_for(path: str | Path | None) -> CostLedger:
    """The one ledger of ``path`` in this process (clients of one workdir share it)."""
    if path is None:
        return CostLedger(None)
    key = Path(path).resolve()
    with _LEDGERS_LOCK:
        if key not in _LEDGERS:
            _LEDGERS[key] = CostLedger(key)
        return _LEDGERS[key]


class CostLedger:
    """Token usage and spend; thread-safe; saved atomically (throttled, and on ``save()``).

    Callers price each call (``cost_usd=None`` for unpriced) from a :class:`PriceTable`.
    """

    def __init__(self, path: str | Path | None = None, save_every_s: float = 1.0):
        self.path = Path(path) if path is not None else None
        self.save_every_s = save_every_s
        self.price_tables: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._session: dict[tuple[str, str, str], _Entry] = {}
        self._previous: dict[tuple[str, str, str], _Entry] = {}
        self._spent = 0.0
        self._reserved = 0.0                        # upper-bound cost of the calls in flight
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self.budget_stopped = False                 # a call was refused for the budget this run
        self._unpriced_calls = 0
        self._last_save = 0.0
        self._dirty = False
        self.budget_usd: float | None = None        # shown by spend_str (the last client's cap)
        if self.path is not None and self.path.exists():
            self._load_previous()

    def _load_previous(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            for e in data.get("entries", []):
                cost = e["cost_usd"]
                self._previous[(e["provider"], e["model"], e["agent"])] = _Entry(
                    e["calls"], e["cached_calls"], e["input_tokens"], e["output_tokens"],
                    0.0 if cost == UNPRICED else float(cost), cost == UNPRICED)
            for t in data.get("price_tables", []):
                self.price_tables.add((str(t["version"]), str(t["date"])))
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"{self.path}: unreadable LLM ledger ({e}). Fix: move it aside; "
                              "a new one is started on the next call.") from e

    # ---- recording ------------------------------------------------------------------------
    async def reserve(self, amount_usd: float, budget_usd: float, what: str = "") -> None:
        """Set ``amount_usd`` (a call's upper-bound cost) aside before the call is sent.

        While it does not fit beside this run's spend and the other calls in flight, wait for
        those to settle (their real cost is usually far below their bound); when nothing is in
        flight and it still does not fit, raise :class:`BudgetExceeded`. So the calls in flight
        can never together spend more than ``budget_usd``. Pair with :meth:`release`.
        """
        while True:
            with self._lock:
                if self._spent + self._reserved + amount_usd <= budget_usd:
                    self._reserved += amount_usd
                    return
                if self._reserved <= 1e-15:
                    self.budget_stopped = True
                    left = max(0.0, budget_usd - self._spent)
                    raise BudgetExceeded(
                        f"LLM budget of ${budget_usd:.4f} reached: ${self._spent:.4f} spent in this run "
                        f"({self.calls} calls); the next call{what} could cost up to ${amount_usd:.4f}, "
                        f"more than the ${left:.4f} left. No new calls are started; cached answers stay "
                        "free. Fix: raise the budget and re-run to continue from where it stopped.",
                        evidence=self.summary_unlocked())
                fut = asyncio.get_running_loop().create_future()
                self._waiters.append((asyncio.get_running_loop(), fut))
            await fut

    def release(self, amount_usd: float) -> None:
        """Give back a reservation (after :meth:`record` has booked the call's real cost)."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - amount_usd)
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            if loop.is_closed():
                continue
            loop.call_soon_threadsafe(lambda f=fut: f.done() or f.set_result(None))

    @property
    def reserved_usd(self) -> float:
        return self._reserved

    def record(self, provider: str, model: str, agent: str, usage: Usage, *,
               cost_usd: float | None, cached: bool) -> None:
        """One call: ``cost_usd=None`` means unpriced (tokens kept, cost unknown)."""
        with self._lock:
            e = self._session.setdefault((provider, model, agent), _Entry())
            if cached:
                e.cached_calls += 1
            else:
                e.calls += 1
                e.input_tokens += usage.input_tokens
                e.output_tokens += usage.output_tokens
                if cost_usd is None:
                    e.unpriced = True
                    self._unpriced_calls += 1
                else:
                    e.cost_usd += cost_usd
                    self._spent += cost_usd
            self._dirty = True
            due = time.monotonic() - self._last_save >= self.save_every_s
        if due:
            self.save()

    # ---- reporting ------------------------------------------------------------------------
    @property
    def spent_usd(self) -> float:
        """This run's priced spend (unpriced calls are not in it; see ``unpriced_calls``)."""
        return self._spent

    @property
    def unpriced_calls(self) -> int:
        return self._unpriced_calls

    @property
    def calls(self) -> int:
        return sum(e.calls for e in self._session.values())

    @property
    def cached_calls(self) -> int:
        return sum(e.cached_calls for e in self._session.values())

    def spend_str(self) -> str:
        """Short progress-bar text: ``$0.0123/$5.00 40 calls +12 cached (3 unpriced)``."""
        s = f"${self._spent:.4f}"
        if self.budget_usd is not None:
            s += f"/${self.budget_usd:.2f}"
        s += f" {self.calls} calls"
        if self.cached_calls:
            s += f" +{self.cached_calls} cached"
        if self._unpriced_calls:
            s += f" ({self._unpriced_calls} unpriced)"
        return s

    @staticmethod
    def _rows(entries: dict[tuple[str, str, str], _Entry]) -> list[dict[str, Any]]:
        return [{"provider": p, "model": m, "agent": a, "calls": e.calls,
                 "cached_calls": e.cached_calls, "input_tokens": e.input_tokens,
                 "output_tokens": e.output_tokens,
                 "cost_usd": UNPRICED if e.unpriced else round(e.cost_usd, 8)}
                for (p, m, a), e in sorted(entries.items())]

    @staticmethod
    def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {"calls": sum(r["calls"] for r in rows),
                "cached_calls": sum(r["cached_calls"] for r in rows),
                "input_tokens": sum(r["input_tokens"] for r in rows),
                "output_tokens": sum(r["output_tokens"] for r in rows),
                "cost_usd": round(sum(r["cost_usd"] for r in rows if r["cost_usd"] != UNPRICED), 8),
                "unpriced_calls": sum(r["calls"] for r in rows if r["cost_usd"] == UNPRICED)}

    def summary(self) -> dict[str, Any]:
        """Cumulative entries (earlier runs of the workdir + this one) and this run's totals.

        ``cost_usd`` of an entry is ``"unpriced"`` if any of its calls was; totals add the
        priced ones and count the unpriced calls separately."""
        with self._lock:
            return self.summary_unlocked()

    def summary_unlocked(self) -> dict[str, Any]:
        """:meth:`summary` for a caller that holds the ledger's lock."""
        merged = {k: _Entry(**vars(v)) for k, v in self._previous.items()}
        for k, v in self._session.items():
            merged.setdefault(k, _Entry()).add(v)
        rows, session_rows = self._rows(merged), self._rows(self._session)
        tables = sorted(self.price_tables)
        return {"price_tables": [{"version": v, "date": d} for v, d in tables],
                "entries": rows, "total": self._totals(rows), "this_run": self._totals(session_rows)}

    def save(self, wait: bool = False) -> None:
        """Write the ledger (atomically, off the event loop; ``wait`` until it is on disk)."""
        if self.path is None:
            return
        with self._lock:
            self._dirty = False
            self._last_save = time.monotonic()
        data = (json.dumps(self.summary(), indent=2, sort_keys=True) + "\n").encode("utf-8")
        write_behind(self.path, data)
        if wait:
            flush_writes()

    def flush(self, wait: bool = True) -> None:
        """Write the ledger if it changed; ``wait`` for every pending LLM file write."""
        if self._dirty:
            self.save()
        if wait:
            flush_writes()
