"""A small hand-written data set in the LongMemEval format, for tests and smoke runs.

Six questions of four types (one abstention, ``_abs``), invented here: nothing in it
comes from LongMemEval itself, whose data is not redistributed with the project.
``python -m memstrata.testing.synthetic_longmemeval OUT.json`` writes it as a file for
``memstrata eval longmemeval --data OUT.json``.
"""

from __future__ import annotations

import json
import sys
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
    """Write the data set as a LongMemEval JSON file at ``path``."""
    path.write_text(json.dumps(RECORDS, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


if __name__ == "__main__":  # pragma: no cover - a convenience for smoke runs
    if len(sys.argv) != 2:
        sys.exit("usage: python -m memstrata.testing.synthetic_longmemeval OUT.json")
    print(write(Path(sys.argv[1])))
