"""Patterns for the user's work: ``job`` and ``employer`` (English and Chinese), in one
module so one place decides them.

* ``job``: "I work as X", "my job is X", "I'm a nurse", 我是程序员, 我在外企做销售,
  我转行做了设计, and "by day I'm an accountant";
* ``employer``: "I work at X", "I joined X", "I got hired by X", 我在腾讯工作, 我入职了
  X, 我在一家叫X的公司上班; 我在深圳工作 names a city, not an employer (the
  ``cn_workplace`` check of :mod:`memstrata.extract.values`).

A change that names both ("I joined ByteDance as a product manager", 加入字节跳动做产品
经理) is read by the change frames of :mod:`memstrata.extract.frames`.
"""

from __future__ import annotations

from memstrata.extract.patterns import (
    ADV,
    CN_ADV,
    CN_CLAUSE_END,
    CN_END,
    CN_ME,
    CN_VAL,
    END,
    I_ADV_NEG,
    VAL,
    FactPattern,
    cn,
    en,
)

# --- building blocks: an employer's name ---------------------------------------------------
_ORG = r"(?P<v>(?:[^,.;:!?()\"]|\.(?=\s?\w)){1,80}?)"
_ORG_SHORT = r"(?P<v>(?:[^,.;:!?()\"]|\.(?=\s?\w)){1,60}?)"
# --- jobs ----------------------------------------------------------------------------------
_WORK_AS_EN = en(*I_ADV_NEG, r"work(?:s|ing)?\s+as\s+(?:an?\s+|the\s+)?", VAL, END)
_MY_JOB_EN = en(r"\bmy\s+(?:job|profession|occupation)\s+is\s+(?:an?\s+)?(?!to\b)", VAL, END)
_I_AM_A_EN = en(
    r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+|no\s+longer\s+)?(?:now\s+|currently\s+|also\s+|"
    r"actually\s+)?(?:an?|the)\s+",
    VAL,
    END,
)
_JOB_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>不|并不|不再)?",
    CN_ADV,
    r"是(?:一名|一位|一个|一|个|名|位)?",
    CN_VAL,
    CN_END,
)
_MY_JOB_CN = cn(r"我的(?:工作|职业)(?P<neg>不)?是", CN_VAL, CN_END)
_JOB_AT_CN = cn(
    CN_ME,
    CN_ADV,
    r"在[^，。,.;；!！?？、\s]{1,20}?(?:做|当|担任)(?P<v>[^，。,.;；!！?？、\s]{1,12}?)",
    CN_END,
)
# --- employers -----------------------------------------------------------------------------
_WORK_AT_EN = en(
    *I_ADV_NEG,
    r"(?:work|teach|intern)(?:s|ed|ing)?\b(?:\s+(?:as|in|on)\s+[\w\s'-]{1,40}?)?"
    r"\s+(?:at|for)\s+",
    _ORG,
    END,
)
_JOB_AT_EN = en(
    r"\bI(?:'m|\s+am)\s+(?:now\s+|currently\s+|also\s+|actually\s+)?(?:an?|the)\s+"
    r"[\w\s'-]{1,40}?\s+(?:at|for|with)\s+",
    _ORG,
    END,
)
_EMPLOYED_EN = en(
    r"\bI(?:'m|\s+am|\s+was|'ve\s+been|\s+have\s+been)\s+(?:now\s+)?(?:employed|hired)\s+(?:by|at)\s+",
    _ORG,
    END,
)
_BEEN_AT_EN = en(
    r"\bI(?:'ve|\s+have)\s+been\s+(?:working\s+)?(?:at|with|for)\s+",
    _ORG,
    r"(?=\s+(?:for|since)\b)",
)
_JOINED_EN = en(
    r"\bI(?:'ve|\s+have)?\s+",
    ADV,
    r"(?:joined|started\s+(?:working\s+|a\s+new\s+job\s+|work\s+)?(?:at|with|for)|"
    r"started\s+at|got\s+a\s+job\s+(?:at|with)|moved\s+to\s+a\s+new\s+job\s+at)\s+",
    _ORG,
    END,
)
_WORKPLACE_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>不再|已经不|以前|曾经|没有|没|不)?在(?P<v>[^，。,.;；!！?？、\s]{1,20}?)",
    r"(?:工作|上班|做事|任职|实习|干活|干了|打工|供职|做|当|担任)",
)
_AT_ORG_CN = cn(CN_ME, CN_ADV, r"在", CN_VAL, CN_CLAUSE_END)
_JOINED_CN = cn(
    CN_ME,
    CN_ADV,
    # 从X跳槽到Y: where the move started is no part of where it ended.
    r"(?:从[^，。,.;；!！?？、]{1,20}?)?",
    r"(?:加入了|加入|入职了|入职|跳槽到了|跳槽到|跳槽去了|跳槽去|换到了|换到)",
    CN_VAL,
    CN_END,
)
_COMPANY_CALLED_CN = cn(
    CN_ME,
    CN_ADV,
    r"在一家(?:叫|名叫|叫做)(?P<v>[^，。,.;；!！?？、\s的]{1,12})的[\u4e00-\u9fff]{0,8}?",
    r"(?:公司|企业|工作室|机构|银行|医院|学校|店)",
)
_ORG_OF_CN = cn(
    CN_ME,
    CN_ADV,
    r"是(?P<v>[^，。,.;；!！?？、\s的]{2,12})的[^，。,.;；!！?？、\s]{0,6}?",
    r"(?:学生|研究生|博士生|员工|老师|教授|医生|护士|工程师|程序员|经理|实习生|职员)",
)
_DO_FOR_EN = en(r"\bI\s+", ADV, r"do\s+(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+(?:for|at)\s+(?-i:[A-Z])")
_DO_FOR_ORG_EN = en(r"\bI\s+", ADV, r"do\s+[\w-]+(?:\s+[\w-]+)?\s+(?:for|at)\s+", _ORG_SHORT, END)
_WORKING_AS_EN = en(r"\bI(?:'m|\s+am)\s+", ADV, r"working\s+as\s+(?:an?\s+|the\s+)?", VAL, END)
_WORKING_AT_EN = en(
    r"\bI(?:'m|\s+am)\s+",
    ADV,
    r"working\s+(?:as\s+[\w\s'-]{1,40}?\s+)?(?:at|for)\s+",
    _ORG_SHORT,
    END,
)
_GOT_HIRED_EN = en(
    r"\bI\s+",
    ADV,
    r"(?:got|was|just\s+got)\s+(?:hired|employed|taken\s+on)\s+(?:by|at)\s+",
    _ORG_SHORT,
    END,
)
_NOW_AT_EN = en(
    r"\bI\s+(?:left|quit)\b[^.;!?]{1,60}?,?\s+(?:and\s+)?(?:I'm\s+|am\s+)?now\s+(?:at|with|"
    r"working\s+(?:at|for))\s+",
    _ORG_SHORT,
    END,
)
_BY_DAY_EN = en(
    r"\b(?:by\s+day|during\s+the\s+day|for\s+a\s+living|professionally),?\s+I(?:'m|\s+am)\s+"
    r"(?:an?\s+)?",
    VAL,
    END,
)
_DO_JOB_CN = cn(
    CN_ME, CN_ADV, r"(?:是)?(?:做|搞|干)(?P<v>[\u4e00-\u9fffA-Za-z]{1,6}?)的(?=$|[，。,.!！]|啊|呢)"
)
_DO_AS_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:在[^，。,.;；!！?？、\s]{1,20}?)?(?:做|当|担任|干)(?:一名|一个|个)?",
    r"(?P<v>[\u4e00-\u9fffA-Za-z]{1,8}?)",
    CN_END,
)
_SWITCHED_JOB_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:转行|改行|转岗)(?:去)?(?:做|当|干)了?(?P<v>[\u4e00-\u9fffA-Za-z]{1,8}?)",
    CN_END,
)

WORK_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_WORK_AS_EN, "job", 0.9, 0.6, "job"),
    FactPattern(_MY_JOB_EN, "job", 0.85, 0.6, "job"),
    FactPattern(_I_AM_A_EN, "job", 0.7, 0.6, "job_noun"),
    FactPattern(_JOB_CN, "job", 0.85, 0.6, "cn_job"),
    FactPattern(_MY_JOB_CN, "job", 0.9, 0.6, "cn_object"),
    FactPattern(_JOB_AT_CN, "job", 0.85, 0.6, "cn_job"),
    FactPattern(_WORK_AT_EN, "employer", 0.85, 0.6, "org"),
    FactPattern(_JOB_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_EMPLOYED_EN, "employer", 0.9, 0.6, "org"),
    FactPattern(_BEEN_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_JOINED_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_WORKPLACE_CN, "employer", 0.8, 0.6, "cn_workplace"),
    FactPattern(_AT_ORG_CN, "employer", 0.75, 0.6, "cn_known_org"),
    FactPattern(_JOINED_CN, "employer", 0.8, 0.6, "cn_org"),
    FactPattern(_COMPANY_CALLED_CN, "employer", 0.85, 0.6, "cn_object"),
    FactPattern(_ORG_OF_CN, "employer", 0.75, 0.6, "cn_org"),
    FactPattern(_DO_FOR_EN, "job", 0.7, 0.6, "job"),
    FactPattern(_DO_FOR_ORG_EN, "employer", 0.75, 0.6, "org_proper"),
    FactPattern(_WORKING_AS_EN, "job", 0.85, 0.6, "job"),
    FactPattern(_WORKING_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_GOT_HIRED_EN, "employer", 0.85, 0.6, "org_proper"),
    FactPattern(_NOW_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_BY_DAY_EN, "job", 0.8, 0.6, "job_noun"),
    FactPattern(_DO_JOB_CN, "job", 0.75, 0.6, "cn_job_noun"),
    FactPattern(_DO_AS_CN, "job", 0.8, 0.6, "cn_job_noun"),
    FactPattern(_SWITCHED_JOB_CN, "job", 0.85, 0.6, "cn_job_noun"),
)
