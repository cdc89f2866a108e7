"""Never-compress fields kept by build_context with an 8k-window model (gpt-4) and a
long support conversation: how many ids, amounts, dates and decisions are lost, and
what the memory block gave up. docs/benchmarks.md, "Compression keeps the numbers".

    PYTHONPATH=src .venv/bin/python tests/context/measure_compression.py
"""

from __future__ import annotations

from memstrata.context import (
    ContextBudget,
    ContextRequest,
    MemoryItem,
    Turn,
    build_context,
    counter_for_model,
    find_protected,
)


def turns(n):
    out = []
    for i in range(n // 2):
        order, amount = f"ORD-2024-{1000 + i:06d}", f"¥{1200 + 37 * i}.50"
        out.append(
            Turn(
                "user",
                f"Hi, about order {order}: I paid {amount} on 2024-03-{1 + i % 28:02d} "
                "and the parcel still has not arrived. The tracking page keeps saying it is "
                "in transit and nobody answers at the courier. Can you check?",
            )
        )
        out.append(
            Turn(
                "assistant",
                f"Sorry for the trouble. Order {order} was charged {amount} and "
                f"refund ticket RF{77000 + i} is open. We decided to refund it in full if it "
                f"does not arrive by 2024-04-{1 + i % 28:02d}. Anything else?",
            )
        )
    return tuple(out)


memory = tuple(
    MemoryItem(
        f"m{i}",
        f"Memory {i}: the customer prefers short answers. " * 6,
        "L3",
        f"p{i}",
        "memories",
        0.9 - 0.1 * i,
    )
    for i in range(6)
)
counter = counter_for_model("gpt-4")
for n in (20, 40, 60):
    history = turns(n)
    values = {f.value for t in history for f in find_protected(t.content)}
    built = build_context(
        ContextRequest(
            "You are a support agent.", "Where is my refund?", memory=memory, history=history
        ),
        ContextBudget.for_model("gpt-4"),
        counter,
    )
    text = "\n".join(m["content"] for m in built.messages())
    lost = sum(v not in text for v in values)
    mem = sum(a.section == "memory" for a in built.admitted)
    print(
        f"{n} turns: {lost}/{len(values)} fields lost, {mem}/6 memories packed, "
        f"history budget {built.section('history').budget}, "
        f"used {built.total_tokens}/{built.available_tokens}"
    )
