"""The customer-support reference agent (docs/agents.md): product questions answered from
an ingested FAQ, order status through a tool bound to the session's order, refunds
through a confirmed high-impact tool, preferences kept across sessions, and a user's
correction that the feedback loop turns into a superseding fact.

The script runs three sessions of one customer over nine days on an injected clock:

1. a product question (FAQ), the customer's city and contact preferences (promoted
   from the extracted facts to structured L2 preferences), an out-of-scope question
   (asked back: L3 was skipped);
2. "where is my order?" (asked for the order id), the id (the order tool, whose first
   attempt fails with a key in its error body, retried), a refund (held for the
   customer's confirmation, then run), the shipping city from memory, which the
   customer corrects (``engine.feedback(..., "corrected")``);
3. the shipping city again (the corrected one), how they will be told (the
   preference said in session 1), and a phone number they never gave: the
   preferences are loaded, but none answers it, so the reply says so and the step
   counts as not effective for CER.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata.agents.loop import AgentLoop, StepRecord
from memstrata.agents.run import AgentRun
from memstrata.agents.writer import (
    ReplyRequest,
    ReplyWriter,
    RuleWriter,
)
from memstrata.cer import overlap
from memstrata.clock import FakeClock
from memstrata.decision import Slot, StepPolicy, ToolSpec
from memstrata.engine import ContextEngine
from memstrata.frozen import thaw
from memstrata.knowledge.documents import Document
from memstrata.router import IntentSpec, L2Need, L3Need

TENANT = "support"
USER = "c_1001"
START = datetime(2025, 3, 3, 9, tzinfo=UTC)
ORDER_ID = "O-1042"
LANGUAGES = frozenset({"English", "Chinese", "Mandarin", "Cantonese", "French", "German"})
SECRET = "sk_" + "live_51Hq3uXYZ4abcDEF5ghiJKL6mno"
"""A (fake) credential the order system leaks in its error body and a debug field: the
gateway must keep it out of the replies, the cards and Valkey. Built from parts so
secret scanners see no key in the source."""

FAQ = """# Volta X200 power bank FAQ

## Battery life
The Volta X200 holds 20,000 mAh and charges a phone about four times on a full charge. \
A full recharge of the X200 takes 3 hours with the 30 W adapter.

## Warranty
Every Volta product has a 24-month warranty from the delivery date. Damaged items \
reported within 14 days are refunded in full.

## Shipping
Orders ship within 2 business days. Delivery takes 3 to 5 business days in mainland China.

## Returns
Returns are free within 30 days of delivery. Refunds reach the original payment method \
within 5 business days.
"""

INSTRUCTIONS = (
    "You are the customer-support agent of Volta, a maker of power banks. Answer from the "
    "context items only: FAQ chunks, the order system's records, the customer's "
    "preferences and memories. Keep order ids, amounts and dates exactly as written; "
    "never promise what the items do not say. Write one or two short sentences."
)

_ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^O-[0-9]{4,}$"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
ORDER_LOOKUP = ToolSpec(
    "order_lookup",
    "Look an order up in the order system: status, carrier, tracking, total.",
    _ORDER_SCHEMA,
    risk="low",
    bound={"order_id": "l1.last_entity_id"},
)
REFUND = ToolSpec(
    "refund",
    "Refund an order in full to its original payment method (irreversible).",
    _ORDER_SCHEMA,
    risk="high",
    high_impact=True,
    bound={"order_id": "l1.last_entity_id"},
)

_L1 = ("session_id", "user_id", "initial_query", "current_step")
_L1_ORDER = (*_L1, "last_entity_id")
_ORDER_NEED = L2Need("api", "order_lookup", {"order_id": "$last_entity_id"}, label="order_status")
_CHANNEL = L2Need("preference", "contact_channel", label="contact_preference")
_LANGUAGE = L2Need("preference", "language", label="language_preference")

INTENTS: tuple[IntentSpec, ...] = (
    IntentSpec(
        "product_question",
        l1=_L1,
        l3=(L3Need("knowledge", k=3, per_user=False, label="faq"),),
        description="a product question, answered from the FAQ",
        examples=(
            "How big is the battery in the X200?",
            "Does it come with a charging cable?",
            "What's covered by the warranty if it breaks?",
            "How much does the power bank weigh?",
            "Can this charge an iPad?",
            "这个充电宝的容量有多大？",
            "保修包括哪些情况？",
            "这款产品能给平板充电吗？",
            "充电宝重多少克？",
            "X200 支持无线充电吗？",
            "What's the charging speed of the X200?",
            "X200 的充电速度快吗？",
        ),
    ),
    IntentSpec(
        "set_preferences",
        l1=_L1,
        l2=(_CHANNEL, _LANGUAGE),
        l3=(L3Need("memories", k=4, label="memory"),),
        description="the customer states how to reach them and where they live",
        examples=(
            "Please use email to reach me.",
            "Call me on my phone rather than emailing.",
            "I'm based in Shanghai.",
            "I'd like you to write to me in English.",
            "Send notifications to my WeChat, please.",
            "I moved to Beijing last month.",
            "请通过电话联系我。",
            "我现在住在上海。",
            "用英文跟我沟通就好。",
            "通知发到我的邮箱吧。",
            "我上个月搬去北京了。",
            "I'd rather get messages on Telegram.",
            "Please don't phone me, just text.",
            "别打我电话，发消息就好。",
        ),
    ),
    IntentSpec(
        "contact_preference",
        l1=_L1,
        l2=(_CHANNEL, _LANGUAGE),
        description="how the customer wants to be told",
        examples=(
            "How are you going to contact me?",
            "What's my preferred contact method?",
            "Will you email me or call me?",
            "How will I find out about the update?",
            "Which way did I ask to be reached?",
            "你们打算怎么联系我？",
            "我留的联系方式是哪个？",
            "会打电话还是发邮件给我？",
            "我怎么才能知道进展？",
            "我选的通知方式是什么？",
            "Will you notify me by text?",
            "到时候会发短信给我吗？",
            "How will I be told when my order ships?",
            "How do you plan to let me know about the refund?",
            "发货以后怎么通知我？",
            "退款了会告诉我吗？",
        ),
    ),
    IntentSpec(
        "order_status",
        l1=_L1_ORDER,
        l2=(_ORDER_NEED,),
        description="the status of the session's order",
        examples=(
            "Where's my package?",
            "Has my order been shipped?",
            "When is my delivery coming?",
            "What's the tracking status of order O-9001?",
            "My order hasn't arrived yet.",
            "我的货发出来了吗？",
            "订单现在什么状态？",
            "快递什么时候送到？",
            "查一下订单 O-9001 的物流。",
            "我买的东西怎么还没到？",
            "Check the shipping status of my package.",
            "帮我看看包裹的配送进度。",
        ),
    ),
    IntentSpec(
        "refund",
        l1=_L1_ORDER,
        l2=(
            L2Need("api", "refund", {"order_id": "$last_entity_id"}, label="refund_receipt"),
            _ORDER_NEED,
            _CHANNEL,
            _LANGUAGE,
        ),
        description="refund the session's order (confirmed by the customer)",
        examples=(
            "I'd like my money back.",
            "Please issue a refund for order O-9001.",
            "The product is faulty, I want to return it.",
            "Where is my refund?",
            "Can you cancel and refund the purchase?",
            "我想把钱退回来。",
            "请给我办理退款。",
            "东西坏了，我要退货。",
            "退款什么时候到账？",
            "取消这个订单并退款。",
        ),
    ),
    IntentSpec(
        "shipping_city",
        l1=_L1,
        # The entity route (docs/architecture.md, "The reader"): the memory asked for,
        # not the whole message.
        l3=(L3Need("memories", query="user city", k=3, label="city_memory"),),
        description="where the customer's parcels go, from memory",
        examples=(
            "What city do my parcels ship to?",
            "Which address do you deliver to?",
            "Where do you send my packages?",
            "Is my delivery city still the old one?",
            "What shipping destination is on file?",
            "包裹寄到哪个城市？",
            "我的收货地址在哪个城市？",
            "你们把东西送到哪里？",
            "配送城市还是原来那个吗？",
            "我的送货地址是哪里？",
            "To which city will you deliver?",
            "我的东西会寄到哪个地方？",
        ),
    ),
)

_ORDER_SLOT = Slot(
    "order_id",
    ("given.order_id", "l1.last_entity_id"),
    "Which order do you mean? Please give me its number (it looks like O-1042).",
)
POLICIES: tuple[StepPolicy, ...] = (
    StepPolicy(
        "product_question",
        risk="low",
        evidence=("faq_*",),
        slots=(
            Slot(
                "details",
                ("given.details",),
                "I couldn't find that in our product FAQ. Could you tell me more, or shall "
                "I pass it to a colleague?",
            ),
        ),
    ),
    StepPolicy(
        "set_preferences",
        risk="low",
        evidence=("contact_preference", "language_preference", "memory_*"),
    ),
    StepPolicy(
        "contact_preference",
        risk="low",
        evidence=("contact_preference", "language_preference"),
    ),
    StepPolicy(
        "order_status",
        risk="medium",
        evidence=("order_status",),
        slots=(_ORDER_SLOT,),
        tool="order_lookup",
        tool_params={"order_id": "order_id"},
    ),
    StepPolicy(
        "refund",
        risk="high",
        evidence=("refund_receipt",),
        slots=(_ORDER_SLOT,),
        tool="refund",
        tool_params={"order_id": "order_id"},
    ),
    StepPolicy(
        "shipping_city",
        risk="medium",
        evidence=("city_memory_*",),
        slots=(Slot("city", ("given.city",), "Which city should we ship to?"),),
    ),
)

_ORDER_ID = re.compile(r"\bO-\d{4,}\b")
_FACT = re.compile(r"^(?P<subject>\S+) (?P<attribute>[^:]+): (?P<value>.+)$", re.S)


class OrderSystem:
    """The shop's order system, simulated: thread-safe, and it records every call.

    Its first lookup fails with a credential in the error body (the retry succeeds),
    and every answer carries one in a debug field.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._orders: dict[str, dict[str, Any]] = {
            ORDER_ID: {
                "order_id": ORDER_ID,
                "item": "Volta X200 power bank",
                "status": "delivered",
                "delivered_on": "2025-03-04",
                "carrier": "SF Express",
                "tracking": "SF1403229871",
                "total": 59.0,
                "currency": "USD",
            }
        }
        self.lookups: list[str] = []
        self.refunds: list[str] = []
        self._failed_once = False

    def lookup(self, params: Mapping[str, Any]) -> dict[str, Any]:
        order_id = str(params["order_id"])
        with self._lock:
            self.lookups.append(order_id)
            if not self._failed_once:
                self._failed_once = True
                raise RuntimeError(f"order-api 503: upstream rejected api_key={SECRET}")
            order = self._orders.get(order_id)
        if order is None:
            raise LookupError(f"no order {order_id}")
        return {**order, "debug": f"served by replica-2 with api_key={SECRET}"}

    def refund(self, params: Mapping[str, Any]) -> dict[str, Any]:
        order_id = str(params["order_id"])
        with self._lock:
            order = self._orders.get(order_id)
            if order is None:
                raise LookupError(f"no order {order_id}")
            self.refunds.append(order_id)
            number = len(self.refunds)
        return {
            "refund_id": f"R-{5530 + number}",
            "order_id": order_id,
            "amount": order["total"],
            "currency": order["currency"],
            "status": "issued",
            "business_days": 5,
        }


# -- how the rule writer phrases each intent's values ---------------------------------


def _facts(request: ReplyRequest, attribute: str) -> list[str]:
    """Values of the evidence's L3 facts ``<subject> <attribute>: <value>``, best first."""
    found = []
    for item in sorted(request.evidence, key=lambda i: -i.provenance.relevance):
        content = thaw(item.content)
        if not isinstance(content, dict) or content.get("type") != "fact":
            continue
        match = _FACT.match(str(content.get("text", "")))
        if match and match["attribute"].strip() == attribute:
            found.append(match["value"].strip())
    return found


def _preference(request: ReplyRequest, name: str) -> str | None:
    value = request.value(name)
    if isinstance(value, dict) and value.get("value"):
        return str(value["value"])
    return None


def _contact(request: ReplyRequest) -> str:
    channel = _preference(request, "contact_preference")
    language = _preference(request, "language_preference")
    if channel is None:
        return ""
    return f"by {channel}" + (f", in {language}" if language else "")


def compose_product_answer(request: ReplyRequest) -> str:
    """The sentence of the most relevant FAQ chunk that shares most with the question."""
    best = max(request.evidence, key=lambda i: i.provenance.relevance)
    content = thaw(best.content)
    text = str(content.get("text", "")) if isinstance(content, dict) else ""
    heading, _, body = text.partition("\n\n") if "\n\n" in text else ("", "", text)
    sentences = [s.strip().rstrip(".") + "." for s in body.replace("\n", " ").split(". ")]
    sentence = max(sentences, key=lambda s: overlap(request.question, s))
    section = heading.rsplit(" > ", 1)[-1]
    return f"{sentence} (Product FAQ, {section})" if section else sentence


def compose_preferences(request: ReplyRequest) -> str:
    contact = _contact(request)
    cities = _facts(request, "city")
    parts = [f"we'll contact you {contact}" if contact else ""]
    if cities:
        parts.append(f"ship your orders to {cities[0]}")
    said = ", and ".join(p for p in parts if p)
    return f"Noted: {said}." if said else "Noted."


def compose_contact(request: ReplyRequest) -> str:
    contact = _contact(request)
    if not contact:
        return "You haven't told us how to reach you yet: email or SMS?"
    return f"We'll tell you {contact}, as soon as it ships."


def compose_order_status(request: ReplyRequest) -> str:
    order = request.value("order_status", {})
    return (
        f"Order {order.get('order_id')} ({order.get('item')}) is {order.get('status')}: "
        f"{order.get('carrier')} delivered it on {order.get('delivered_on')}, tracking "
        f"{order.get('tracking')}. Order total {order.get('total')} {order.get('currency')}."
    )


def compose_refund(request: ReplyRequest) -> str:
    order = request.value("order_status", {})
    if request.purpose == "confirm":
        return (
            f"I can refund order {order.get('order_id', 'this order')} "
            f"({order.get('item', 'your item')}, {order.get('total')} {order.get('currency')}) "
            "to your original payment method. This cannot be undone: shall I go ahead?"
        )
    receipt = request.value("refund_receipt", {})
    contact = _contact(request)
    told = f" We'll confirm it {contact}." if contact else ""
    return (
        f"Refund {receipt.get('refund_id')} of {receipt.get('amount')} "
        f"{receipt.get('currency')} for order {receipt.get('order_id')} is "
        f"{receipt.get('status')}; it reaches your original payment method within "
        f"{receipt.get('business_days')} business days.{told}"
    )


def compose_shipping_city(request: ReplyRequest) -> str:
    cities = _facts(request, "city")
    if not cities:
        return "I don't have a city on file for you: where should we ship it?"
    return f"We'll ship it to {cities[0]}, the city we have on file for you."


COMPOSERS = {
    "product_question": compose_product_answer,
    "set_preferences": compose_preferences,
    "contact_preference": compose_contact,
    "order_status": compose_order_status,
    "refund": compose_refund,
    "shipping_city": compose_shipping_city,
}


def rule_writer() -> RuleWriter:
    """The support agent's deterministic reply writer: the items the customer's message
    asks about, phrased per intent (:class:`~memstrata.agents.writer.RuleWriter`)."""
    return RuleWriter(COMPOSERS)


# -- the agent ------------------------------------------------------------------------


class SupportAgent:
    """The customer-support agent on ``engine``.

    ``writer`` writes the answers (the rule writer by default; a model writer falls
    back to it when the endpoint fails); ``clock``, the engine's fake clock, is moved
    forward between steps and sessions; ``orders`` is the order system its tools call;
    ``run_id`` makes the session ids unique; ``confirm_refund`` is the customer's answer
    when the refund waits for confirmation.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        writer: ReplyWriter | None = None,
        clock: FakeClock | None = None,
        orders: OrderSystem | None = None,
        run_id: str | None = None,
        confirm_refund: bool = True,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self.orders = orders or OrderSystem()
        self._run = run_id or uuid.uuid4().hex[:8]
        scripted = rule_writer()
        self._loop = AgentLoop(
            engine,
            tenant=TENANT,
            policies={p.intent: p for p in POLICIES},
            writer=writer or scripted,
            fallback=scripted,
            instructions=INSTRUCTIONS,
        )
        self._writer_name = (writer or scripted).name
        self._confirm_refund = confirm_refund
        self._ready = False

    @property
    def loop(self) -> AgentLoop:
        return self._loop

    def setup(self) -> None:
        """Register the intents, policies and tools; ingest the FAQ (once)."""
        if self._ready:
            return
        for spec in INTENTS:
            self._engine.register_intent(spec, replace=True)
        for policy in POLICIES:
            self._engine.register_policy(policy, replace=True)
        self._engine.register_tool(ORDER_LOOKUP, self.orders.lookup, replace=True)
        self._engine.register_tool(REFUND, self.orders.refund, replace=True)
        report = self._engine.ingest_documents(
            [Document("faq/volta-x200.md", FAQ, "markdown")], tenant=TENANT
        )
        if report.errors:
            raise RuntimeError(f"the FAQ could not be ingested: {report.errors}")
        self._ready = True

    def run(self, *, fresh: bool = True) -> AgentRun:
        """The three scripted sessions. ``fresh`` first forgets what an earlier run
        left of the customer (memories, preferences), so every run tells the same
        story."""
        self.setup()
        if fresh:
            self._engine.forget(USER, tenant=TENANT)
        steps = [*self._session_one(), *self._session_two(), *self._session_three()]
        return AgentRun(
            "support",
            TENANT,
            self._writer_name,
            tuple(steps),
            self._engine.decision_rates(),
            {
                "order_lookups": len(self.orders.lookups),
                "refunds": list(self.orders.refunds),
                "preferences": {
                    p.pref_type: p.value for p in self._engine.list_preferences(USER, tenant=TENANT)
                },
            },
        )

    # -- sessions --------------------------------------------------------------------

    def _session_one(self) -> list[StepRecord]:
        sid = self._start(1, "Hi, I have a question about the Volta X200.", at=START)
        steps = []
        said = "How many times can the X200 charge my phone?"
        step = self._say(sid, "product_question", said, "S1 product question", query=said)
        steps.append(self._loop.feedback(step, "confirmed"))
        said = "I live in Hangzhou. Please email me, not SMS, and I prefer English."
        steps.append(self._preferences(sid, said))
        said = "Can I pay with bitcoin?"
        steps.append(self._say(sid, "product_question", said, "S1 out of scope", query=said))
        self._engine.end_session(sid)
        return steps

    def _session_two(self) -> list[StepRecord]:
        sid = self._start(2, "Where is my order?", at=START + timedelta(days=2))
        steps = [self._say(sid, "order_status", "Where is my order?", "S2 order, no id")]
        said = f"It's {ORDER_ID}."
        step = self._say(
            sid, "order_status", said, "S2 order id given", given=self._order(sid, said)
        )
        steps.append(self._loop.feedback(step, "confirmed"))
        said = f"The X200 arrived damaged. Please refund order {ORDER_ID}."
        held = self._say(sid, "refund", said, "S2 refund asked", given=self._order(sid, said))
        steps.append(held)
        if held.pending_id is not None:
            self._tick()
            yes = self._confirm_refund
            said = "Yes, go ahead." if yes else "No, leave it."
            title = "S2 refund confirmed" if yes else "S2 refund declined"
            steps.append(self._loop.confirm(held, said, confirmed=yes, title=title))
            self._observe(sid, said)
        said = "Please send a replacement too. Which city will you ship it to?"
        step = self._say(sid, "shipping_city", said, "S2 city from memory")
        steps.append(step)
        # The customer corrects the city: the feedback loop, not the chat log, turns it
        # into the new fact (the correction is not observed as an ordinary turn).
        self._tick()
        correction = "That's wrong: I moved to Shenzhen."
        corrected = self._loop.feedback(
            step, "corrected", correction=correction, wrong=_city_facts(step)
        )
        steps.append(
            StepRecord(
                sid,
                "S2 customer corrects the city",
                "feedback",
                correction,
                reply="Thanks for correcting me: I have updated your details.",
                feedback=corrected.feedback[-1:],
            )
        )
        self._engine.flush()
        self._engine.end_session(sid)
        return steps

    def _session_three(self) -> list[StepRecord]:
        sid = self._start(3, "Checking on my replacement.", at=START + timedelta(days=9))
        said = "Which city will my replacement ship to?"
        step = self._say(sid, "shipping_city", said, "S3 city after the correction")
        steps = [self._loop.feedback(step, "confirmed")]
        said = "How will you let me know when it ships?"
        step = self._say(sid, "contact_preference", said, "S3 preference from session 1")
        steps.append(self._loop.feedback(step, "confirmed"))
        # Never said: the contact preferences are loaded (the decision answers), but
        # none holds a phone number.
        said = "Do you have a phone number for me, in case the courier needs it?"
        steps.append(self._say(sid, "contact_preference", said, "S3 phone number never given"))
        self._engine.end_session(sid)
        return steps

    # -- helpers ---------------------------------------------------------------------

    def _start(self, number: int, query: str, *, at: datetime) -> str:
        if self._clock is not None and self._clock.now() < at:
            self._clock.set(at)
        state = self._engine.start_session(
            USER, query, tenant=TENANT, session_id=f"support-{self._run}-s{number}"
        )
        return state.session_id

    def _tick(self) -> None:
        if self._clock is not None:
            self._clock.advance(timedelta(minutes=1))

    def _observe(self, sid: str, text: str) -> None:
        self._engine.observe(sid, "user", text)

    def _say(
        self,
        sid: str,
        intent: str,
        said: str,
        title: str,
        *,
        query: str | None = None,
        given: Mapping[str, Any] | None = None,
    ) -> StepRecord:
        self._tick()
        self._engine.update_session(sid, lambda s: s.advance())
        step = self._loop.step(sid, intent, said, title=title, query=query, given=given)
        # Observed after the step: the turn is memory for later steps, not its own context.
        self._observe(sid, said)
        return step

    def _order(self, sid: str, said: str) -> dict[str, Any] | None:
        """The order id the customer gave, made the session's entity."""
        match = _ORDER_ID.search(said)
        if match is None:
            return None
        order_id = match.group(0)
        self._engine.update_session(sid, lambda s: s.with_entity(order_id))
        return {"order_id": order_id}

    def _preferences(self, sid: str, said: str) -> StepRecord:
        """What the customer said, stored: the facts the extractor reads from it, and the
        contact channel and language promoted to structured preferences (L2)."""
        self._tick()
        receipt = self._engine.observe(sid, "user", said)
        self._engine.flush()
        for fact in self._engine.written(receipt, tenant=TENANT).facts:
            if fact.attribute == "contact_channel":
                pref: tuple[str, str] | None = ("contact_channel", fact.value)
            elif fact.attribute == "prefers" and fact.value in LANGUAGES:
                pref = ("language", fact.value)
            else:
                pref = None
            if pref is not None:
                self._engine.set_preference(
                    USER, pref[0], pref[1], round(fact.source.confidence, 2), tenant=TENANT
                )
        self._engine.update_session(sid, lambda s: s.advance())
        return self._loop.step(
            sid, "set_preferences", said, title="S1 preferences and city", query=said
        )


def _city_facts(step: StepRecord) -> list[str]:
    """The ids of the city facts the answer used (the ones the customer says are wrong)."""
    if step.bundle is None:
        return []
    out = []
    for item in step.bundle.items:
        content = thaw(item.content)
        if (
            item.provenance.layer == "L3"
            and isinstance(content, dict)
            and content.get("type") == "fact"
            and str(content.get("text", "")).startswith("user city:")
        ):
            out.append(item.provenance.ref)
    return out
