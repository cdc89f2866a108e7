"""Data sets in the LongMemEval format, for tests, smoke runs and timing runs.

Two kinds, both invented here: nothing in them comes from LongMemEval itself, whose
data is not redistributed with the project.

* :data:`RECORDS`: six hand-written questions of four types (one abstention,
  ``_abs``), a few short turns each;
* :func:`s_shaped`: generated questions of LongMemEval_S's shape - about 50 sessions
  and ~115k tokens of haystack per question, half the turns long assistant answers
  (numbered lists, bold titles), the user's turns shorter and now and then stating
  something about the user, the answer in one or more evidence sessions. The words
  are drawn from topic vocabularies, so the text reads like chat only from afar: it
  is for timing the write path on turns of the right length and shape
  (:func:`long_turns`, ``memstrata bench write --long``), not for scoring retrieval.

``python -m memstrata.testing.synthetic_longmemeval OUT.json`` writes the
hand-written set, ``... --s-shaped N OUT.json`` N generated questions, as a file for
``memstrata eval longmemeval --data OUT.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

RECORDS: list[dict[str, Any]] = [
    {
        "question_id": "synth_ssu_01",
        "question_type": "single-session-user",
        "question": "What breed is my dog Biscuit?",
        "answer": "a border collie",
        "question_date": "2023/06/10 (Sat) 09:15",
        "haystack_session_ids": ["ssu01_a", "ssu01_b", "ssu01_c"],
        "haystack_dates": [
            "2023/05/01 (Mon) 10:00",
            "2023/05/14 (Sun) 18:30",
            "2023/06/02 (Fri) 08:05",
        ],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "Can you suggest a quick pasta recipe for tonight?",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Try spaghetti aglio e olio: garlic, olive oil, chili "
                    "flakes and parsley.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "My dog Biscuit is a border collie and he needs more exercise.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Herding breeds love fetch, agility courses and long hikes.",
                    "has_answer": False,
                },
                {
                    "role": "user",
                    "content": "Thanks, I will try an agility class on Saturdays.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "What is a good budget for a weekend trip to Lisbon?",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Around 400 euros covers a hostel, food and the tram.",
                    "has_answer": False,
                },
            ],
        ],
        "answer_session_ids": ["ssu01_b"],
    },
    {
        "question_id": "synth_ssu_02",
        "question_type": "single-session-user",
        "question": "Which instrument did I start learning?",
        "answer": "the cello",
        "question_date": "2023/07/01 (Sat) 20:00",
        "haystack_session_ids": ["ssu02_a", "ssu02_b"],
        "haystack_dates": ["2023/06/20 (Tue) 19:00", "2023/06/25 (Sun) 11:40"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I started learning the cello last week with a private teacher.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Wonderful! Practise bowing on open strings every day.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "How do I repot a fiddle leaf fig?",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Use a pot two inches wider with fresh, well draining soil.",
                    "has_answer": False,
                },
            ],
        ],
        "answer_session_ids": ["ssu02_a"],
    },
    {
        "question_id": "synth_multi_01",
        "question_type": "multi-session",
        "question": "How many marathons have I run in total?",
        "answer": "2",
        "question_date": "2023/11/20 (Mon) 07:30",
        "haystack_session_ids": ["multi01_a", "multi01_b", "multi01_c"],
        "haystack_dates": [
            "2023/04/16 (Sun) 15:00",
            "2023/08/03 (Thu) 21:10",
            "2023/10/22 (Sun) 16:45",
        ],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I just finished my first marathon in Boston, 2 marathons "
                    "is my goal this year.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Congratulations on finishing Boston! Rest and hydrate.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "Any tips for growing tomatoes on a balcony?",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Choose cherry varieties and water them every morning.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "I completed the Chicago marathon today, my second marathon.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Two marathons in one year is a great achievement.",
                    "has_answer": False,
                },
            ],
        ],
        "answer_session_ids": ["multi01_a", "multi01_c"],
    },
    {
        "question_id": "synth_temp_01",
        "question_type": "temporal-reasoning",
        "question": "When did I adopt the kitten?",
        "answer": "March 2023",
        "question_date": "2023/09/05 (Tue) 12:00",
        "haystack_session_ids": ["temp01_a", "temp01_b"],
        "haystack_dates": ["2023/03/12 (Sun) 14:20", "2023/07/30 (Sun) 09:00"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "Today I adopted a tabby kitten from the shelter, it is "
                    "March and she is tiny.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Kittens need vaccinations at eight and twelve weeks.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "Which laptop is better for photo editing?",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Look for a colour accurate screen and 32 GB of memory.",
                    "has_answer": False,
                },
            ],
        ],
        "answer_session_ids": ["temp01_a"],
    },
    {
        "question_id": "synth_ku_01",
        "question_type": "knowledge-update",
        "question": "Where do I work now?",
        "answer": "Northwind Labs",
        "question_date": "2023/12/01 (Fri) 10:00",
        "haystack_session_ids": ["ku01_a", "ku01_b"],
        "haystack_dates": ["2023/02/01 (Wed) 09:00", "2023/10/15 (Sun) 17:25"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I work at Contoso as a data analyst.",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Data analysts at Contoso use a lot of SQL.",
                    "has_answer": False,
                },
            ],
            [
                {
                    "role": "user",
                    "content": "I switched jobs and now I work at Northwind Labs as a "
                    "data engineer.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Congratulations on the new role at Northwind Labs!",
                    "has_answer": False,
                },
            ],
        ],
        "answer_session_ids": ["ku01_b"],
    },
    {
        "question_id": "synth_ssu_03_abs",
        "question_type": "single-session-user",
        "question": "What colour is my car?",
        "answer": "The information provided is not enough to answer.",
        "question_date": "2023/08/08 (Tue) 08:08",
        "haystack_session_ids": ["abs01_a"],
        "haystack_dates": ["2023/08/01 (Tue) 18:00"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I bought a new bicycle helmet yesterday.",
                    "has_answer": False,
                },
                {
                    "role": "assistant",
                    "content": "Make sure it fits snugly and has a MIPS liner.",
                    "has_answer": False,
                },
            ]
        ],
        "answer_session_ids": [],
    },
]


def records() -> list[dict[str, Any]]:
    """A fresh copy of the records (callers may change it)."""
    copied: list[dict[str, Any]] = json.loads(json.dumps(RECORDS))
    return copied


def write(path: Path) -> Path:
    """Write the hand-written data set as a LongMemEval JSON file at ``path``."""
    path.write_text(json.dumps(RECORDS, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


# --- LongMemEval_S-shaped haystacks, generated ----------------------------------------

S_SESSIONS = 50
"""Haystack sessions per question in LongMemEval_S (about 50)."""
S_TOKENS = 115_000
"""Haystack tokens per question in LongMemEval_S (about 115k)."""
TOKEN_ENCODING_MODEL = "gpt-4"
"""Whose tokens a haystack's size is counted in (cl100k_base, shipped offline)."""


def _vocabulary(words: str) -> tuple[str, ...]:
    return tuple(words.split())


# Turn lengths in words, log-normal: (median, sigma, floor, ceiling). Together they
# give LongMemEval_S's turns: median ~90 words, mean ~165, half of them assistant
# answers of a few hundred words.
_USER_WORDS = (28.0, 1.0, 4, 1200)
_ASSISTANT_WORDS = (195.0, 0.8, 20, 1200)

_TOPICS: dict[str, tuple[str, ...]] = {
    "planning a trip": _vocabulary(
        "itinerary flight hotel hostel passport visa luggage museum beach train ticket "
        "neighborhood restaurant guidebook layover airport currency tour ferry cathedral "
        "market souvenir reservation backpack insurance"
    ),
    "cooking at home": _vocabulary(
        "recipe oven skillet garlic onion pasta sauce spice marinade dough flour butter "
        "broth vegetable seasoning casserole grill knife ingredient dessert yogurt lentil "
        "tortilla noodle saucepan"
    ),
    "getting fitter": _vocabulary(
        "workout treadmill squat stretch protein marathon interval dumbbell yoga posture "
        "hydration cardio sneaker coach routine muscle recovery bicycle swimming plank "
        "warmup endurance heartbeat"
    ),
    "the garden": _vocabulary(
        "tomato compost seedling soil fertilizer pruning mulch greenhouse succulent "
        "orchid watering planter shade sunlight pest aphid herb lavender hedge trellis "
        "basil rosemary shovel"
    ),
    "personal finance": _vocabulary(
        "budget savings mortgage pension dividend expense paycheck loan interest "
        "spreadsheet subscription insurance deposit credit invoice portfolio retirement "
        "fund account bill rent tax receipt"
    ),
    "learning to code": _vocabulary(
        "function variable loop database python javascript framework server browser "
        "tutorial debugger repository commit algorithm array dictionary module library "
        "query endpoint terminal compiler script"
    ),
    "photography": _vocabulary(
        "camera lens aperture shutter tripod exposure lighting portrait landscape "
        "sunrise filter sensor zoom editing composition flash studio histogram print "
        "album telephoto viewfinder silhouette"
    ),
    "music lessons": _vocabulary(
        "guitar piano violin cello chord scale rhythm metronome melody lesson teacher "
        "song concert practice album harmony tempo tuning recital band drum lyric "
        "keyboard rehearsal"
    ),
    "a new puppy": _vocabulary(
        "puppy leash kennel crate treat vet vaccine walk collar training toy bowl "
        "grooming shampoo breed trainer harness park fetch blanket chew kibble bed "
        "behavior"
    ),
    "the apartment": _vocabulary(
        "apartment landlord lease furniture sofa curtain shelf kitchen bathroom paint "
        "carpet lamp mattress closet drawer balcony heater neighbor plumber wardrobe "
        "rug desk window"
    ),
    "a career change": _vocabulary(
        "resume interview recruiter manager salary promotion colleague deadline project "
        "meeting certificate portfolio network conference mentor skill presentation "
        "contract office schedule startup role feedback"
    ),
    "reading more": _vocabulary(
        "novel chapter author library bookstore poetry biography memoir series "
        "paperback audiobook podcast essay character plot genre shelf review bookmark "
        "translation anthology publisher"
    ),
}
_ADJECTIVES = _vocabulary(
    "simple quick reliable affordable flexible healthy cozy sturdy gentle bright "
    "practical popular seasonal local detailed careful steady lightweight classic fresh "
    "balanced quiet compact durable creative"
)
_VERBS = _vocabulary(
    "check plan compare track organize prepare adjust choose review measure "
    "schedule clean test store protect replace improve practice explore balance"
)
_ADVERBS = _vocabulary("gradually regularly carefully early consistently slowly first weekly")
_EXPERTS = _vocabulary("specialist local expert friend coach professional instructor advisor")
_RELATIONS = _vocabulary("sister brother mom dad cousin friend coworker neighbor partner roommate")
_DAYS = _vocabulary("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_CITIES = _vocabulary("Denver Lisbon Osaka Toronto Austin Prague Seattle Dublin Melbourne Boston")
_JOBS = _vocabulary("nurse teacher engineer accountant designer pharmacist architect librarian")
_PETS = (
    ("dog", "golden retriever", "beagle", "border collie"),
    ("cat", "Maine Coon", "Siamese", "ragdoll"),
    ("rabbit", "Holland Lop", "Rex", "Lionhead"),
)
_NAMES = _vocabulary("Biscuit Luna Pepper Milo Nala Olive Ziggy Mochi Juniper Rocket")
_COMPANIES = _vocabulary("Contoso Northwind Fabrikam Globex Initech Umbrella Tailspin Litware")

_ASSISTANT_SENTENCES = (
    "{Verb} your {n1} {adv} so that the {n2} stays {adj}.",
    "Many people find that a {adj} {n1} makes the {n2} much easier to manage.",
    "It is worth comparing the {n1} and the {n2} before you commit to either one.",
    "If you have {k} hours a week, spend about {m} of them on the {n1}.",
    "Keep a short log of the {n1}, because small changes in the {n2} add up over time.",
    "A {adj} {n1} usually costs between ${a} and ${b}, depending on the {n2}.",
    "Consider asking a {expert} about the {n1} if the {n2} does not improve.",
    "Start with the {n1}, then move on to the {n2} once you feel comfortable.",
    "Avoid rushing the {n1}; a {adj} approach to the {n2} pays off in the long run.",
    "Set a reminder every {day} to {verb} the {n1} and note how the {n2} changes.",
    "This is especially helpful when the {n1} is {adj} and the {n2} is not.",
    "Remember that every {n1} is different, so {verb} what works for your {n2}.",
)
_ASSISTANT_OPENERS = (
    "Great question! Here are some ideas about {topic} that should help:",
    "That sounds like a fun project. When it comes to {topic}, a few things matter most:",
    "Happy to help with {topic}. Here is a practical plan you can adapt:",
    "There are several ways to approach {topic}. Some suggestions:",
)
_ASSISTANT_CLOSERS = (
    "I hope this helps, and let me know if you want more detail on any of these points!",
    "Feel free to ask if you would like a more specific plan for your situation.",
    "Good luck, and enjoy the process!",
)
_USER_QUESTIONS = (
    "Can you give me some ideas for the {n1} that would work with a {adj} {n2}?",
    "What is the best way to {verb} my {n1} without spending too much?",
    "How often should I {verb} the {n1}, and does the {n2} matter?",
    "Could you suggest a {adj} {n1} for someone who is just starting out?",
    "Do you think a {adj} {n2} is worth it, or should I focus on the {n1}?",
)
_USER_CONTEXT = (
    "I've been thinking about {topic} for a while now.",
    "My {relation} suggested that I look into a {adj} {n1}.",
    "Last {day} I spent {k} hours on the {n1} and it went better than expected.",
    "I already have a {n1}, but the {n2} keeps giving me trouble.",
    "I'm trying to keep things {adj}, so the {n1} should not take too long.",
    "I usually {verb} the {n1} on {day}s, right after work.",
)
_USER_FACTS = (
    "I live in {city}.",
    "I work as a {job}.",
    "I really love a {adj} {n1}.",
    "I prefer the {n1} over the {n2}.",
    "My {relation} is {age} years old.",
    "I decided to {verb} the {n1} next {day}.",
    "I paid ${a} for a new {n1} last week.",
)


def _fill(template: str, rng: random.Random, topic: str) -> str:
    nouns = _TOPICS[topic]
    n1, n2 = rng.sample(nouns, 2)
    low = rng.randint(10, 400)
    hours = rng.randint(2, 12)
    verb = rng.choice(_VERBS)
    return template.format(
        topic=topic,
        n1=n1,
        n2=n2,
        adj=rng.choice(_ADJECTIVES),
        verb=verb,
        Verb=verb.capitalize(),
        adv=rng.choice(_ADVERBS),
        expert=rng.choice(_EXPERTS),
        relation=rng.choice(_RELATIONS),
        day=rng.choice(_DAYS),
        city=rng.choice(_CITIES),
        job=rng.choice(_JOBS),
        k=hours,
        m=max(1, hours // 3),
        a=low,
        b=low + rng.randint(20, 600),
        age=rng.randint(3, 70),
    )


def _words(rng: random.Random, shape: tuple[float, float, int, int]) -> int:
    median, sigma, floor, ceiling = shape
    return max(floor, min(ceiling, round(math.exp(rng.gauss(math.log(median), sigma)))))


def _assistant_answer(rng: random.Random, topic: str, words: int) -> str:
    """An answer in the style of a chat model: an opener, a numbered list of tips with
    bold titles, a closing line - about ``words`` words."""
    parts = [_fill(rng.choice(_ASSISTANT_OPENERS), rng, topic)]
    count = len(parts[0].split())
    item = 0
    while count < words - 15:
        item += 1
        title = " ".join(w.capitalize() for w in rng.sample(_TOPICS[topic], 2))
        body = " ".join(
            _fill(rng.choice(_ASSISTANT_SENTENCES), rng, topic) for _ in range(rng.randint(1, 3))
        )
        line = f"{item}. **{title}**: {body}"
        parts.append(line)
        count += len(line.split())
    parts.append(rng.choice(_ASSISTANT_CLOSERS))
    return "\n\n".join(parts) if item else " ".join(parts)


def _user_turn(rng: random.Random, topic: str, words: int, said: str | None = None) -> str:
    """A user's message of about ``words`` words: context, now and then a fact about
    the user, and a question at the end; ``said`` (an evidence statement) goes first."""
    sentences = [said] if said else []
    question = _fill(rng.choice(_USER_QUESTIONS), rng, topic)
    count = sum(len(s.split()) for s in sentences) + len(question.split())
    while count < words:
        pool = _USER_FACTS if rng.random() < 0.25 else _USER_CONTEXT
        sentence = _fill(rng.choice(pool), rng, topic)
        sentences.append(sentence)
        count += len(sentence.split())
    return " ".join([*sentences, question])


def _lme_date(at: datetime) -> str:
    return at.strftime("%Y/%m/%d (%a) %H:%M")


def _evidence(rng: random.Random, kind: str) -> tuple[str, str, list[str]]:
    """A question of ``kind``, its answer and what the user says in the evidence
    sessions (one statement per session, in order)."""
    if kind == "single-session-user":
        pet, *breeds = rng.choice(_PETS)
        name, breed = rng.choice(_NAMES), rng.choice(breeds)
        return (
            f"What breed is my {pet} {name}?",
            breed,
            [f"My {pet} {name} is a {breed} and needs a lot of attention."],
        )
    if kind == "knowledge-update":
        old, new = rng.sample(_COMPANIES, 2)
        return (
            "Where do I work now?",
            new,
            [f"I work at {old} in the finance team.", f"I switched jobs and I work at {new} now."],
        )
    if kind == "multi-session":
        first, second = rng.sample(_CITIES, 2)
        return (
            "How many marathons have I run?",
            "2",
            [f"I ran the {first} marathon last weekend.", f"I finished the {second} marathon."],
        )
    name = rng.choice(_NAMES)
    return (
        f"When did I adopt my kitten {name}?",
        "on the date of the evidence session",
        [f"Today I adopted a kitten named {name} from the shelter."],
    )


_KINDS = ("single-session-user", "knowledge-update", "multi-session", "temporal-reasoning")


def s_shaped_question(
    index: int,
    *,
    sessions: int = S_SESSIONS,
    target_tokens: int = S_TOKENS,
    seed: int = 0,
) -> dict[str, Any]:
    """One generated question of LongMemEval_S's shape (module docstring): ``sessions``
    haystack sessions of ``target_tokens`` tokens in all (cl100k), deterministic for
    ``(index, seed)``."""
    from memstrata.context.tokens import counter_for_model

    if sessions < 2 or target_tokens < 100 * sessions:
        raise ValueError("sessions: at least 2; target_tokens: at least 100 per session")
    count = counter_for_model(TOKEN_ENCODING_MODEL).count
    rng = random.Random(f"{seed}/{index}")
    kind = _KINDS[index % len(_KINDS)]
    question, answer, said = _evidence(rng, kind)
    qid = f"synth_s_{index:03d}"
    asked_at = datetime(2023, 5, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 200))
    starts = sorted(
        asked_at - timedelta(days=rng.uniform(1, 360), minutes=rng.randint(0, 600))
        for _ in range(sessions)
    )
    evidence_at = sorted(rng.sample(range(sessions), len(said)))
    ids: list[str] = []
    haystack: list[list[dict[str, Any]]] = []
    used = 0
    for s in range(sessions):
        topic = rng.choice(list(_TOPICS))
        # Sessions vary in length around the mean; the last ones close the gap to the
        # target, so the haystack's size comes out near it.
        left = target_tokens - used
        goal = left / (sessions - s) * (1.0 if s == sessions - 1 else rng.uniform(0.6, 1.4))
        statement = said[evidence_at.index(s)] if s in evidence_at else None
        turns: list[dict[str, Any]] = []
        tokens = 0
        while tokens < goal or not turns:
            user = _user_turn(rng, topic, _words(rng, _USER_WORDS), statement)
            reply = _assistant_answer(rng, topic, _words(rng, _ASSISTANT_WORDS))
            turns.append({"role": "user", "content": user, "has_answer": statement is not None})
            turns.append({"role": "assistant", "content": reply, "has_answer": False})
            tokens += count(user) + count(reply)
            statement = None
        used += tokens
        prefix = "answer" if s in evidence_at else "haystack"
        ids.append(f"{prefix}_{qid}_{s}")
        haystack.append(turns)
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "answer": answer,
        "question_date": _lme_date(asked_at),
        "haystack_session_ids": ids,
        "haystack_dates": [_lme_date(at) for at in starts],
        "haystack_sessions": haystack,
        "answer_session_ids": [ids[s] for s in evidence_at],
    }


def s_shaped(
    questions: int, *, sessions: int = S_SESSIONS, target_tokens: int = S_TOKENS, seed: int = 0
) -> list[dict[str, Any]]:
    """``questions`` generated questions of LongMemEval_S's shape (module docstring)."""
    return [
        s_shaped_question(i, sessions=sessions, target_tokens=target_tokens, seed=seed)
        for i in range(questions)
    ]


def long_turns(turns: int, *, seed: int = 0) -> list[tuple[str, str, str, str]]:
    """The first ``turns`` turns of generated S-shaped haystacks, in order, as
    ``(question_id, session_id, role, text)``: the long turns ``memstrata bench write
    --long`` observes."""
    if turns < 1:
        raise ValueError("turns: must be >= 1")
    out: list[tuple[str, str, str, str]] = []
    index = 0
    while len(out) < turns:
        record = s_shaped_question(index, seed=seed)
        qid = record["question_id"]
        for session_id, session in zip(
            record["haystack_session_ids"], record["haystack_sessions"], strict=True
        ):
            out.extend((qid, session_id, t["role"], t["content"]) for t in session)
        index += 1
    return out[:turns]


def main(argv: list[str] | None = None) -> None:
    """``python -m memstrata.testing.synthetic_longmemeval [--s-shaped N] OUT.json``."""
    parser = argparse.ArgumentParser(prog="python -m memstrata.testing.synthetic_longmemeval")
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--s-shaped", type=int, default=0, metavar="N", help="N generated S-shaped questions"
    )
    parser.add_argument("--sessions", type=int, default=S_SESSIONS)
    parser.add_argument("--tokens", type=int, default=S_TOKENS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.s_shaped:
        data = s_shaped(
            args.s_shaped, sessions=args.sessions, target_tokens=args.tokens, seed=args.seed
        )
        args.out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    else:
        write(args.out)
    print(args.out)


if __name__ == "__main__":  # pragma: no cover - a convenience for smoke runs
    main()
