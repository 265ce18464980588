"""A Mesa model's decisions taken by policies, hooked per instance: no class swapped, no subclass, nothing edited.

``Hooks.install`` sets, on each agent of a decision's class (and on each one born later, through
the model's own ``register_agent``), an instance attribute over the decision's method, and one
over the model's ``step``. Mesa calls both by attribute, so the model runs its own code, in its
own order, drawing from its own stream; ``type(agent)`` is untouched, so a model that counts its
agents by exact class (``agents_by_type[Sheep]``) counts them right. Everything is per model
instance, so several games in flight in one process never see each other's hooks.

When a decision is taken:

* ``step``: at the start of each step, every deciding agent's view is read and all of their
  decisions are asked at once (an LLM population's calls in flight together); the method, when
  the model calls it, carries out the answer given;
* ``turn``: at the call itself, on the state as it is then. Where the model activates its agents
  through an agent set's ``shuffle_do``/``do`` and the decision names ``depends_on``, the order is
  known before the first turn (the set's own shuffle, drawn as the model draws it), and each
  turn's call leaves as soon as the turns it depends on are done: calls wait only on those. A
  turn's view is read again at its turn, and an answer asked on another view is asked again, so
  the outcome is the one-at-a-time game's whatever ``depends_on`` says.

Under the ``mesa`` policy the model's own method runs unchanged: the game is the model's own run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from llm_mesa.adapter.decision import Decision, View, draw
from llm_mesa.decisions import Turn, as_turn
from llm_mesa.errors import GameError
from llm_mesa.llm.event_loop import get_loop
from llm_mesa.llm.runtime import gather_sync, run_sync
from llm_mesa.policy import Policy
from llm_mesa.update import dependencies, depth

#: a model's hooks, by model (nothing is set on the model's own objects but the hooked methods)
HOOKS: weakref.WeakKeyDictionary[Any, Hooks] = weakref.WeakKeyDictionary()


class OwnRule(Policy):
    """The model's own rule: its methods run as it wrote them (the ``mesa`` policy).

    Args:
        decisions: the game's decisions, whose declared rules say how likely the model's own code makes each
            answer (``distribution``: what ``llm-mesa fit`` weighs recorded decisions by).
    """

    name = "mesa"

    def __init__(self, decisions: Sequence[Decision] = ()) -> None:
        self.decisions = {d.name: d for d in decisions}

    def decide(self, observation: Any, rng: random.Random) -> Any:
        """The declared rule's answer: where a policy wraps this one (a fit's trembling hand), the model's own method
        is not the one that runs.

        Args:
            observation: The ``View`` of one decision.
            rng: Where a rule that draws draws from.

        Returns:
            The answer.
        """
        return draw(self.distribution(observation), rng)

    def distribution(self, observation: Any) -> dict[Any, float]:
        return self.decisions[observation.decision].distribution(observation)


class Hooks:
    """One model's decisions: who decides with which policy, the answers of the step, and what was decided.

    Args:
        model: The model, built.
        decisions: The game's decisions.
        policy: Every agent's policy (a seat's own in ``placed``).
        seed: The game's seed: rule policies' own draws come from it, never from the model's stream.
        variant: The prompt's wording.
        max_rounds: The step limit (None: none).
        after_step: Called after each step (the game's snapshot).
    """

    def __init__(self, model: Any, decisions: Sequence[Decision], policy: Policy, seed: int, variant: str = "study",
                 max_rounds: int | None = None, after_step: Callable[[Hooks], None] | None = None) -> None:
        self.model, self.decisions, self.policy = model, tuple(decisions), policy
        self.variant, self.max_rounds, self.after_step = variant, max_rounds, after_step
        self.placed: dict[Any, Policy] = {}
        self.rng = random.Random(seed)  # rule policies' own draws: never the model's stream
        self.round = 0
        self.pending: dict[tuple[str, Any], str] = {}
        self.loop: _Loop | None = None
        self.asked: Counter[tuple[str, Any]] = Counter()  # decisions of one agent this step (repeats keyed apart)
        self.answers: Counter[tuple[str, str]] = Counter()
        self.decided = self.agreed = self.comparable = self.depth = 0
        self.chain = 0  # the step's longest chain of turns, each waiting for the one before it
        self.started = False  # the step's start asked its agents
        self.records: list[dict[str, Any]] = []
        self._patched: set[int] = set()

    # --- installing ---------------------------------------------------------------------------
    def install(self) -> None:
        model = self.model
        for agent in list(model.agents):
            self.hook(agent)
        register = model.register_agent

        def register_agent(agent: Any) -> None:
            register(agent)
            self.hook(agent)

        model.register_agent = register_agent
        own_step = model.step
        model.step = functools.partial(self.step, own_step)

    def hook(self, agent: Any) -> None:
        for decision in self.decisions:
            if isinstance(agent, decision.agents):
                original = getattr(agent, decision.method)
                setattr(agent, decision.method, functools.partial(self.call, decision, agent, original))

    def policy_of(self, agent: Any) -> Policy:
        return self.placed.get(agent, self.policy)

    # --- a step -------------------------------------------------------------------------------
    def step(self, own_step: Callable[[], None]) -> None:
        self.round += 1
        self.asked.clear()
        self.chain, self.started = 0, False
        timings = {d.timing_of(self.model) for d in self.decisions}
        if "step" in timings:
            self.decide_at_start()
        if any(d.timing_of(self.model) == "turn" and (d.depends_on is not None or d.numbered_turns)
               for d in self.decisions):
            self.intercept()
        own_step()
        self.depth += int(self.started) if timings == {"step"} else self.chain
        if self.max_rounds is not None and self.round >= self.max_rounds:
            self.model.running = False
        if self.after_step is not None:
            self.after_step(self)

    def decide_at_start(self) -> None:
        """Every deciding agent's decision on the state the step starts with, asked together."""
        asks: list[tuple[Decision, Any, View]] = []
        for decision in self.decisions:
            if decision.timing_of(self.model) != "step":
                continue
            for agent in list(self.model.agents):
                if isinstance(agent, decision.agents) and (decision.ask is None or decision.ask(agent)):
                    asks.append((decision, agent, self.view(decision, agent)))
        self.started = bool(asks)
        mine = [(d, a, v) for d, a, v in asks if not isinstance(self.policy_of(a), OwnRule)]
        answers = self.ask_all([(d, a, v, self.turn(d, a)) for d, a, v in mine])
        for (decision, agent, view), answer in zip(mine, answers):
            self.pending[(decision.name, agent)] = answer
            self.note(decision, agent, view, answer)
        for decision, agent, view in asks:
            if isinstance(self.policy_of(agent), OwnRule):
                self.note(decision, agent, view, None, own_rule=True)

    # --- a call of a hooked method ------------------------------------------------------------
    def call(self, decision: Decision, agent: Any, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        own = functools.partial(original, *args, **kwargs)
        if decision.ask is not None and not decision.ask(agent):
            return own()
        policy = self.policy_of(agent)
        if decision.timing_of(self.model) == "step":
            answer = self.pending.pop((decision.name, agent), None)
            if isinstance(policy, OwnRule) or answer is None and (decision.name, agent) in self.asked:
                return own()
            if answer is None:  # an agent the step's start did not see (born in this step): asked now
                answer = self.decide_now(decision, agent, policy)
            return decision.act(agent, answer, own)
        if isinstance(policy, OwnRule):
            self.count_turn()
            self.note(decision, agent, self.view(decision, agent), None, own_rule=True)
            return own()
        return decision.act(agent, self.decide_now(decision, agent, policy), own)

    def decide_now(self, decision: Decision, agent: Any, policy: Policy) -> str:
        view = self.view(decision, agent)
        turn = self.turn(decision, agent)
        ready = self.loop.take(decision, agent, view) if self.loop is not None else None
        if ready is not None:
            answer = ready
        else:
            self.count_turn()
            answer = self.ask_all([(decision, agent, view, turn)])[0]
        self.note(decision, agent, view, answer)
        return answer

    def count_turn(self) -> None:
        """One more turn in the step's chain, unless its loop's plan counted the chain already."""
        if self.loop is None or not self.loop.planned:
            self.chain += 1

    def turn(self, decision: Decision, agent: Any, place: int | None = None) -> Turn:
        """Whose decision, in which round, and (numbered turns, repeats, several decisions) which one."""
        key = (decision.name, agent)
        repeat = self.asked[key]
        self.asked[key] += 1
        if decision.numbered_turns:
            place = place if place is not None else (self.loop.place_of(agent) if self.loop is not None else None)
            return Turn(agent, place, self.round)
        label = decision.name if len(self.decisions) > 1 else None
        if repeat:
            label = f"{label}.{repeat}" if label else repeat
        return Turn(agent, label, self.round)

    def ask_all(self, asks: Sequence[tuple[Decision, Any, View, Turn]]) -> list[str]:
        """The answers of these decisions: rule policies at once, LLM policies' calls in flight together."""
        answers: list[Any] = [None] * len(asks)
        waiting = []
        for i, (_, agent, view, _) in enumerate(asks):
            policy = self.policy_of(agent)
            if policy.is_async:
                waiting.append(i)
            else:
                answers[i] = policy.decide(view, self.rng)
        if waiting:
            said = gather_sync([as_turn(asks[i][3], self.policy_of(asks[i][1]).adecide(asks[i][2], self.rng))
                                for i in waiting])
            for i, answer in zip(waiting, said):
                answers[i] = answer
        return [self.checked(asks[i][0], asks[i][2], a) for i, a in enumerate(answers)]

    @staticmethod
    def checked(decision: Decision, view: View, answer: Any) -> str:
        return answer if answer in decision.choices else decision.failed_answer(view)

    def view(self, decision: Decision, agent: Any) -> View:
        fields = dict(decision.view(agent))
        fields.setdefault("round", self.round)
        return View(fields, decision.name, self.variant, decision.choices)

    def note(self, decision: Decision, agent: Any, view: View, answer: str | None, own_rule: bool = False) -> None:
        """Count one decision (and keep it for the ``decisions`` table)."""
        rule = decision.certain(view)
        if own_rule:
            answer = rule
        self.decided += 1
        if answer is not None:
            self.answers[(decision.name, answer)] += 1
            if rule is not None:
                self.comparable += 1
                self.agreed += answer == rule
        self.records.append({"round": self.round, "agent": agent.unique_id, "decision": decision.name,
                             "answer": answer, **{f"view_{k}": kept(v) for k, v in view.items() if k != "round"}})

    # --- turns of an agent set's loop ---------------------------------------------------------
    def intercept(self) -> None:
        """Hook ``shuffle_do``/``do`` of the model's agent sets (once each), so a loop's order is known first."""
        sets = [self.model.agents, *self.model.agents_by_type.values()]
        for agentset in sets:
            if id(agentset) in self._patched:
                continue
            self._patched.add(id(agentset))
            for name in ("shuffle_do", "do"):
                own = getattr(agentset, name)
                setattr(agentset, name, functools.partial(self.run_loop, agentset, own, name))

    def run_loop(self, agentset: Any, own: Callable[..., Any], how: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        order: list[Any] = []
        if how == "shuffle_do":
            own(order.append)  # the set's own shuffle, drawn from the model's stream as the model's call draws it
        else:
            order = list(agentset)
        outer, self.loop = self.loop, _Loop(self, order)
        try:
            self.loop.run(agentset, method, args, kwargs)
        finally:
            self.loop = outer
        return agentset


class _Loop:
    """One activation loop whose order is known: each turn's call asked once the turns it depends on are done."""

    def __init__(self, hooks: Hooks, order: list[Any]) -> None:
        self.hooks, self.order = hooks, order
        self.places = {id(agent): k for k, agent in enumerate(order)}
        self.ready: dict[int, tuple[View, Any]] = {}
        self.start_after: dict[int, list[int]] = {}
        self.planned = False

    def place_of(self, agent: Any) -> int | None:
        return self.places.get(id(agent))

    def run(self, agentset: Any, method: Any, args: tuple, kwargs: dict) -> None:
        hooks = self.hooks
        ahead = [d for d in hooks.decisions if d.timing_of(hooks.model) == "turn" and d.depends_on is not None]
        if ahead:
            self.plan(ahead)
        for k, agent in enumerate(self.order):
            if agent not in agentset:  # removed by an earlier turn (eaten, died): Mesa's own loop skips it too
                continue
            (getattr(agent, method) if isinstance(method, str) else functools.partial(method, agent))(*args, **kwargs)
            for later in self.start_after.pop(k, ()):
                self.launch(later)

    def plan(self, ahead: list[Decision]) -> None:
        places = self.places

        def related(k: int) -> list[int]:
            agent = self.order[k]
            around = [n for d in ahead if isinstance(agent, d.agents) for n in d.depends_on(agent)]
            return [places[id(n)] for n in around if id(n) in places]

        waits = dependencies(range(len(self.order)), related)
        self.hooks.chain += depth(waits)
        self.planned = True
        if not any(self.hooks.policy_of(agent).is_async for agent in self.order):
            return  # rule policies decide at their turns: nothing to ask ahead
        for k, before in enumerate(waits):
            if before:
                self.start_after.setdefault(max(before), []).append(k)
            else:
                self.launch(k)

    def launch(self, k: int) -> None:
        """Ask turn ``k``'s decision now, on the view it will have at its turn (nothing before it can change it)."""
        hooks, agent = self.hooks, self.order[k]
        policy = hooks.policy_of(agent)
        if not policy.is_async:
            return
        for decision in hooks.decisions:
            if decision.timing_of(hooks.model) != "turn" or decision.depends_on is None \
                    or not isinstance(agent, decision.agents) or (decision.ask is not None and not decision.ask(agent)):
                continue
            view = hooks.view(decision, agent)
            turn = Turn(agent, k if decision.numbered_turns else None, hooks.round)
            coroutine = as_turn(turn, policy.adecide(view, hooks.rng))
            self.ready[id(agent)] = (view, asyncio.run_coroutine_threadsafe(coroutine, get_loop()))
            return

    def take(self, decision: Decision, agent: Any, view: View) -> str | None:
        """The answer asked ahead for this turn, when it was asked on this very view; else None (asked again)."""
        asked = self.ready.pop(id(agent), None)
        if asked is None:
            return None
        seen, future = asked
        answer = run_sync(_result(future))
        if seen != view:
            return None
        self.hooks.asked[(decision.name, agent)] += 1
        return self.hooks.checked(decision, view, answer)


def hooks_of(model: Any) -> Hooks:
    """The hooks of a model a ``MesaGame`` built: its decisions so far, for tables and pages.

    Raises:
        GameError: The model was not built by a ``MesaGame``.
    """
    try:
        return HOOKS[model]
    except KeyError:
        raise GameError(f"{type(model).__name__} was not built by a MesaGame; build it with llm_mesa.play.make_model")\
            from None


def answers(model: Any, decision: str | None = None) -> dict[str, int]:
    """How often each answer was given in a game so far: a game's ``columns`` count its moves with it.

    Args:
        model: A model a ``MesaGame`` built.
        decision: One decision's name (None: every decision).

    Returns:
        Answer -> count.
    """
    counted: dict[str, int] = {}
    for (name, answer), count in hooks_of(model).answers.items():
        if decision is None or name == decision:
            counted[answer] = counted.get(answer, 0) + count
    return counted



_SCALARS = (bool, int, float, str, type(None))
_JSON = json.JSONEncoder(default=str, check_circular=False)  # a view's values are fresh trees, never circular


def kept(value: Any) -> Any:
    """A view's value as a table keeps it: a number, a text or yes/no as it is, anything else as its JSON text (a
    tuple of neighbours' moves and scores), so every game's ``decisions`` table writes to Parquet alike. (It is
    written when the decision is made, not when the table is: a view may hand over a list the model changes later.)"""
    if type(value) in _SCALARS:
        return value
    if hasattr(value, "item"):
        value = value.item()
        if isinstance(value, _SCALARS):
            return value
    if isinstance(value, _SCALARS):  # a subclass: an enum of str, numpy's bool_
        return value
    return _JSON.encode(value)


def agent_details(model: Any, agent: Any) -> tuple[str, int | None, dict[str, Any] | None, str | None]:
    """For a page's agent panel.

    Returns:
        The agent's policy (its spec), the round of its last decision, what it saw then (each value as the view
        gave it: a JSON text the table keeps is read back, its lists as tuples, so pairs stay pairs) and what it
        answered (None, None, None before its first).
    """
    hooks = HOOKS[model]
    policy = hooks.policy_of(agent)
    last = next((r for r in reversed(hooks.records) if r["agent"] == agent.unique_id), None)
    if last is None:
        return policy.spec(), None, None, None
    seen = {k[len("view_"):]: _unkept(v) for k, v in last.items() if k.startswith("view_")}
    return policy.spec(), last["round"], seen, last["answer"]


def _unkept(value: Any) -> Any:
    """``kept``'s JSON text back to its value, lists as tuples; any other value as it is."""
    if not (isinstance(value, str) and value[:1] in "[{"):
        return value
    try:
        return _tuples(json.loads(value))
    except ValueError:
        return value


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


async def _result(future: Any) -> Any:
    return await asyncio.wrap_future(future)


__all__ = ["HOOKS", "Hooks", "OwnRule", "agent_details", "answers", "hooks_of"]
