# ruff: noqa: E501
"""Generate the second blind redaction corpus (split "blind2").

Written blind on 2026-12-07, without reading the detector, its tests or the first corpus.
Deterministic and stdlib-only: `python eval_corpus/redaction2/make_blind2.py` rewrites
src/memstrata/eval/data/redaction/blind2.jsonl byte for byte; `--check` compares instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "memstrata" / "eval" / "data" / "redaction" / "blind2.jsonl"
SEED = 20261207

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
ZW = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]

rng = random.Random(SEED)


def rs(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# ---------------------------------------------------------------- checksums


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + rs(string.digits, length - len(prefix) - 1)
    for c in string.digits:
        if luhn_ok(body + c):
            return body + c
    raise AssertionError("unreachable")


GB_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
GB_C = "10X98765432"


def gb_check(first17: str) -> str:
    return GB_C[sum(int(a) * w for a, w in zip(first17, GB_W, strict=True)) % 11]


def gb_ok(s: str) -> bool:
    return len(s) == 18 and s[:17].isdigit() and gb_check(s[:17]) == s[17].upper()


# ---------------------------------------------------------------- secret values

AREAS = [
    "110105",
    "310115",
    "440106",
    "330106",
    "510107",
    "320102",
    "420111",
    "610113",
    "120104",
    "500103",
    "350203",
    "430104",
]


def v_cn_id() -> str:
    y = rng.randint(1958, 2005)
    m = rng.randint(1, 12)
    d = rng.randint(1, 28)
    first = f"{rng.choice(AREAS)}{y:04d}{m:02d}{d:02d}{rng.randint(0, 999):03d}"
    return first + gb_check(first)


def v_card() -> str:
    kind = rng.choice(["up", "up", "visa", "mc", "amex", "up19"])
    if kind == "up":
        return luhn_complete(rng.choice(["622202", "622848", "621700", "622588", "620522"]), 16)
    if kind == "up19":
        return luhn_complete(rng.choice(["621226", "622208", "621661"]), 19)
    if kind == "visa":
        return luhn_complete("4" + rs(string.digits, 5), 16)
    if kind == "mc":
        return luhn_complete("5" + rng.choice("12345") + rs(string.digits, 4), 16)
    return luhn_complete(rng.choice(["34", "37"]), 15)


def v_mobile() -> str:
    return (
        rng.choice(["13", "15", "17", "18", "19", "16"])
        + rng.choice("0356789")
        + rs(string.digits, 8)
    )


def v_phone() -> str:
    k = rng.randint(0, 5)
    m = v_mobile()
    if k == 0:
        return f"+86 {m}"
    if k == 1:
        return f"{m[:3]} {m[3:7]} {m[7:]}"
    if k == 2:
        return f"{m[:3]}-{m[3:7]}-{m[7:]}"
    if k == 3:
        return f"+1 (415) {rng.randint(200, 989)}-{rng.randint(1000, 9999)}"
    return m


FIRST = [
    "li.wei",
    "zhangmin",
    "wang.fang",
    "chen_jie",
    "liu.yang",
    "j.smith",
    "maria.gomez",
    "tkoh",
    "anna.berg",
    "dev.ops",
    "sunhao",
    "zhao.lei",
    "o.nakamura",
    "p.dubois",
]
DOMAINS = [
    "qq.com",
    "163.com",
    "gmail.com",
    "outlook.com",
    "acme-corp.cn",
    "foxmail.com",
    "hotmail.com",
    "sina.com",
    "northwind.io",
    "126.com",
]


def v_email() -> str:
    return f"{rng.choice(FIRST)}{rng.choice(['', str(rng.randint(1, 99))])}@{rng.choice(DOMAINS)}"


PW_WORDS = [
    "Tiger",
    "Sunset",
    "Mango",
    "Qwerty",
    "Dragon",
    "Panda",
    "Falcon",
    "Winter",
    "Lotus",
    "Harbor",
    "Maple",
    "Orbit",
]
PW_NONASCII = [
    "春眠不觉晓",
    "我爱北京",
    "密码很长",
    "早安世界",
    "Café",
    "Noël",
    "Müller",
    "Señor",
    "天天向上",
    "龍騰虎躍",
    "Ærø",
    "小猫钓鱼",
]
PW_SYM = "!@#$%&*?"


def v_password() -> str:
    k = rng.randint(0, 4)
    if k == 0:
        return rng.choice(PW_NONASCII) + rs(string.digits, 3) + rng.choice(PW_SYM)
    if k == 1:
        return rs(ALNUM, 6) + rng.choice(PW_SYM) + rs(ALNUM, 5)
    if k == 2:
        return (
            rng.choice(PW_WORDS)
            + rng.choice(PW_SYM)
            + rs(string.digits, 4)
            + rng.choice(PW_WORDS).lower()
        )
    if k == 3:
        return rng.choice(PW_WORDS) + rng.choice(PW_NONASCII) + rs(string.digits, 2)
    return rs(ALNUM, 12)


def v_url_password() -> str:
    return (
        rng.choice(PW_WORDS) + rs(ALNUM, 6) + rng.choice(["", "_", "-", "~"]) + rs(string.digits, 3)
    )


def v_api_key() -> str:
    k = rng.randint(0, 6)
    if k == 0:
        return "sk-proj-" + rs(B64URL, 48)
    if k == 1:
        return "sk-ant-api03-" + rs(B64URL, 86) + "AA"
    if k == 2:
        return "sk_live_" + rs(ALNUM, 24)
    if k == 3:
        return "SG." + rs(B64URL, 22) + "." + rs(B64URL, 43)
    if k == 4:
        return "key-" + rs(HEX, 32)
    if k == 5:
        return "hf_" + rs(string.ascii_letters, 34)
    return "sk-" + rs(ALNUM, 48)


def v_aws_access() -> str:
    return rng.choice(["AKIA", "AKIA", "ASIA"]) + rs(string.ascii_uppercase + "234567", 16)


def v_aws_secret() -> str:
    return rs(B64, 40)


def v_github() -> str:
    k = rng.randint(0, 3)
    if k == 0:
        return (
            "github_pat_11" + rs(string.ascii_uppercase + string.digits, 20) + "_" + rs(ALNUM, 59)
        )
    return rng.choice(["ghp_", "gho_", "ghs_"]) + rs(ALNUM, 36)


def v_slack() -> str:
    p = rng.choice(["xoxb", "xoxp", "xoxb", "xapp"])
    if p == "xapp":
        return f"xapp-1-A0{rs(string.ascii_uppercase + string.digits, 9)}-{rs(string.digits, 13)}-{rs(HEX, 64)}"
    mid = f"{rs(string.digits, 12)}-{rs(string.digits, 13)}"
    if p == "xoxp":
        return f"xoxp-{mid}-{rs(string.digits, 13)}-{rs(HEX, 32)}"
    return f"xoxb-{mid}-{rs(ALNUM, 24)}"


def v_google() -> str:
    return "AIza" + rs(B64URL, 35)


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def v_jwt() -> str:
    header = b64u(
        json.dumps(
            {"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}, separators=(",", ":")
        ).encode()
    )
    payload = b64u(
        json.dumps(
            {
                "sub": str(rng.randint(10000, 99999)),
                "name": rng.choice(FIRST),
                "iat": 1796000000 + rng.randint(0, 9999999),
            },
            separators=(",", ":"),
        ).encode()
    )
    sig = b64u(bytes(rng.randrange(256) for _ in range(32)))
    return f"{header}.{payload}.{sig}"


def v_bearer() -> str:
    return rng.choice(["", "at_", "ya29.", "pat-"]) + rs(B64URL, 40)


def v_secret() -> str:
    k = rng.randint(0, 4)
    if k == 0:
        return rs(HEX, 64)
    if k == 1:
        return "whsec_" + rs(ALNUM, 32)
    if k == 2:
        return rs(B64, 43) + "="
    if k == 3:
        return rs(ALNUM, 32)
    return "GOCSPX-" + rs(B64URL, 28)


def v_private_key() -> str:
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY"])
    lines = [rs(B64, 64) for _ in range(rng.randint(4, 7))]
    lines.append(rs(B64, rng.randint(10, 40)) + "==")
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


USERS = [
    "admin",
    "root",
    "deploy",
    "svc_etl",
    "app_user",
    "zhangwei",
    "readonly",
    "ci-bot",
    "ops",
    "reporter",
]
HOSTS = [
    "db.internal.acme-corp.cn",
    "10.12.3.45",
    "pg-prod-01.northwind.io",
    "cluster0.x7kq2.mongodb.net",
    "redis.svc.cluster.local",
    "mysql.shop-backend.lan",
    "172.16.8.20",
    "git.acme-corp.cn",
]
NAMES = ["小王", "李工", "张姐", "老陈", "Kevin", "刘经理", "Amy", "周总"]


def fill(t: str, v: str) -> str:
    return t.format(
        v=v,
        u=rng.choice(USERS),
        h=rng.choice(HOSTS),
        n=rng.choice(NAMES),
        port=rng.choice([5432, 3306, 6379, 27017, 8080]),
    )


# Each template: (lang, encoding, text). {v} is the secret as it appears in the text.
T = dict[str, list[tuple[str, str, str]]]

SECRET_TEMPLATES: T = {
    "password": [
        ("en", "plain", "my db password is {v} btw, can you see why the migration hangs?"),
        ("en", "plain", "mysql -h {h} -u {u} -p'{v}' shop < dump.sql"),
        ("en", "plain", "Login: {u}\nPassword: {v}\nPlease change it after first login."),
        ("en", "json", '{{"username": "{u}", "password": "{v}", "remember": true}}'),
        ("en", "plain", "DB_PASSWORD={v}\nDB_HOST={h}\nDB_PORT={port}"),
        ("en", "linebreak", "Hey, the wifi password for the meeting room is\n{v}"),
        ("en", "markdown", "| system | user | password |\n|---|---|---|\n| jenkins | {u} | {v} |"),
        ("en", "plain", "  environment:\n    - POSTGRES_USER={u}\n    - POSTGRES_PASSWORD={v}"),
        (
            "en",
            "plain",
            'Support ticket #88213: customer says their password "{v}" stopped working after the update.',
        ),
        ("en", "plain", "spring.datasource.password=[{v}]"),
        ("en", "plain", "Fwd: new VPN account\n> user: {u}\n> pass: {v}\n> server: {h}"),
        ("en", "markdown", '```ini\n[client]\nuser={u}\npassword="{v}"\n```'),
        ("zh", "plain", "{n}，服务器账号 {u} 密码 {v}，你先登上去看看日志"),
        ("zh", "plain", "账号：{u}\n密码：{v}\n登录后请及时修改"),
        ("zh", "linebreak", "邮箱密码是\n{v}\n别外传哈"),
        ("zh", "plain", "数据库密码改成了「{v}」，配置文件记得同步"),
        ("zh", "plain", "帳號 {u}，密碼：{v}，明天開會前請先登入測試"),
        ("zh", "plain", "【通知】测试环境堡垒机：用户名{u}，口令{v}"),
        ("zh", "plain", "WiFi名称：Office-5G 密码：{v}"),
        ("zh", "plain", "{n}把路由器管理密码设成了（{v}），我怕忘了先记这里"),
        ("zh", "plain", "家裡網路的密碼是 {v} ，記得別告訴別人"),
        ("zh", "plain", "老板让我把财务系统的登录密码 {v} 发给你，用完删掉"),
        ("zh", "linebreak", "我的 VPN 密码：\n{v}"),
        ("mixed", "plain", "帮我看下这个 config 为什么连不上：password: {v} host: {h}"),
        ("mixed", "plain", "root 密码 reset 成 {v} 了，please verify"),
    ],
    "basic_auth": [
        ("en", "url", "DATABASE_URL=postgres://{u}:{v}@{h}:5432/orders"),
        ("en", "plain", "curl -u {u}:{v} https://jenkins.acme-corp.cn/api/json"),
        ("en", "url", "mongodb+srv://{u}:{v}@cluster0.x7kq2.mongodb.net/prod?retryWrites=true"),
        ("en", "url", "REDIS_URL=redis://:{v}@{h}:6379/0"),
        (
            "en",
            "url",
            "git clone https://{u}:{v}@git.acme-corp.cn/platform/infra.git fails with 403",
        ),
        ("en", "plain", "sqlalchemy.url = mysql+pymysql://{u}:{v}@{h}/shop?charset=utf8mb4"),
        (
            "en",
            "url",
            'Traceback (most recent call last):\n  File "etl.py", line 12, in <module>\n    engine = create_engine("postgresql://{u}:{v}@{h}/dw")\nOperationalError: connection refused',
        ),
        ("en", "url", "amqp://{u}:{v}@rabbitmq.internal:5672/%2F is what the worker uses"),
        (
            "en",
            "plain",
            "wget --user={u} --password={v} https://repo.internal/artifacts/app.tar.gz",
        ),
        ("en", "url", "proxy set to http://{u}:{v}@10.0.0.8:3128 but pip still times out"),
        ("en", "plain", "[2026-12-06 09:12:44] ERROR conn failed uri=mysql://{u}:{v}@{h}:3306/crm"),
        ("zh", "url", "连接串是 postgres://{u}:{v}@{h}/report ，帮我看下为啥超时"),
        ("zh", "url", "生产库：mongodb://{u}:{v}@{h}:27017/admin，只读账号"),
        ("zh", "url", "缓存地址 redis://:{v}@{h}:6379/2 ，今天内存打满了"),
        (
            "zh",
            "plain",
            "用这个命令下载：curl -u {u}:{v} https://nexus.acme-corp.cn/repository/raw/a.zip",
        ),
        ("zh", "url", "代理配置 http://{u}:{v}@proxy.corp:8080 ，装包的时候记得加上"),
        ("zh", "url", "數據庫連線字串：mysql://{u}:{v}@{h}/erp（正式環境）"),
        ("zh", "url", "把仓库地址改成 https://{u}:{v}@git.acme-corp.cn/team/app.git 就能拉了"),
        ("zh", "url", "报错日志：\n连接失败 amqp://{u}:{v}@mq.internal:5672/ 拒绝访问"),
        ("zh", "url", "{n}给的 FTP：ftp://{u}:{v}@files.acme-corp.cn/upload"),
        ("zh", "plain", "定时任务里写的是 wget --http-user={u} --http-password={v} 下载报表"),
        ("mixed", "url", "这个 DSN 对吗 postgresql://{u}:{v}@{h}:5432/app?sslmode=require"),
    ],
    "api_key": [
        ("en", "plain", "OPENAI_API_KEY={v}"),
        ("en", "plain", "here's my api key, can you check why every request 401s? {v}"),
        (
            "en",
            "plain",
            'curl https://api.vendor.example/v1/messages -H "x-api-key: {v}" -d @req.json',
        ),
        ("en", "markdown", '```yaml\nprovider:\n  name: llm\n  api_key: "{v}"\n```'),
        (
            "en",
            "plain",
            "GET /v2/items HTTP/1.1\nHost: api.vendor.example\nX-Api-Key: {v}\nAccept: application/json",
        ),
        ("en", "plain", 'client = Client(api_key="{v}")'),
        ("en", "json", '{{"service": "mailer", "apiKey": "{v}"}}'),
        (
            "en",
            "plain",
            "Ticket 4412: customer pasted their live key {v} into the chat, please rotate it",
        ),
        ("en", "markdown", "| env | api key |\n|---|---|\n| prod | `{v}` |"),
        ("en", "linebreak", "API key:\n{v}"),
        ("en", "plain", "requests.get(url, params={{'apikey': '{v}'}})"),
        ("zh", "plain", "这是我的 API Key：{v}，帮我看看为什么一直报 401"),
        ("zh", "plain", "接口调用凭证 apikey={v} 已经发到群里了"),
        ("zh", "linebreak", "大模型的 key 在这：\n{v}"),
        ("zh", "plain", "{n}，把配置里的 api_key 换成 {v} 再重启一下服务"),
        ("zh", "plain", "客服工单：用户把自己的 API 金鑰 {v} 貼在對話裡了，請協助作廢"),
        ("zh", "json", '配置如下：{{"apiKey": "{v}", "区域": "华东"}}'),
        ("zh", "plain", "短信平台的接口 key 是【{v}】"),
        ("zh", "plain", "新申請的 API Key：{v}（僅限測試環境使用）"),
        ("zh", "markdown", "| 服务 | Key |\n|---|---|\n| 翻译接口 | {v} |"),
        ("zh", "plain", "环境变量里加一行 API_KEY={v} 就好"),
        ("mixed", "plain", "帮我 debug 一下，key 是 {v}，endpoint 是 /v1/chat"),
    ],
    "aws_access_key": [
        ("en", "plain", "aws_access_key_id = {v}"),
        ("en", "plain", "export AWS_ACCESS_KEY_ID={v}"),
        ("en", "plain", "botocore.exceptions.ClientError: InvalidAccessKeyId for key {v}"),
        ("en", "json", '{{"AccessKeyId": "{v}", "Status": "Active"}}'),
        ("en", "plain", "the access key on the CI runner is {v}, is it still valid?"),
        ("en", "markdown", "```\n[default]\naws_access_key_id={v}\nregion=us-east-1\n```"),
        ("en", "plain", '  env:\n    - name: AWS_ACCESS_KEY_ID\n      value: "{v}"'),
        ("en", "linebreak", "Access key ID\n{v}"),
        ("en", "plain", "User deploy-bot, key {v}, created 2026-11-02"),
        ("en", "plain", "s3cmd --access_key={v} ls s3://reports"),
        ("zh", "plain", "AWS 的 AccessKey ID：{v}"),
        ("zh", "plain", "{n}，S3 上传用的访问密钥ID是 {v}"),
        ("zh", "linebreak", "亚马逊云账号的 access key：\n{v}"),
        ("zh", "plain", "存取金鑰 ID 為 {v}，請勿外流"),
        ("zh", "plain", "报错说 {v} 这个 key 无效，是不是被禁用了"),
        ("zh", "json", '凭证文件：{{"AccessKeyId": "{v}"}}'),
        ("zh", "plain", "配置文件第3行 aws_access_key_id={v}"),
        ("zh", "plain", "新建的 IAM 用户访问密钥：{v}（已启用）"),
        ("zh", "plain", "流水线里的 AWS_ACCESS_KEY_ID 我改成了 {v}"),
        ("zh", "plain", "測試帳號的 Access Key 是 {v}"),
    ],
    "aws_secret_key": [
        ("en", "plain", "aws_secret_access_key = {v}"),
        ("en", "plain", "export AWS_SECRET_ACCESS_KEY={v}"),
        ("en", "json", '{{"SecretAccessKey": "{v}", "UserName": "deploy-bot"}}'),
        ("en", "plain", "secret key for the backup bucket: {v}"),
        ("en", "markdown", "```\n[prod]\naws_secret_access_key={v}\n```"),
        ("en", "plain", '  - name: AWS_SECRET_ACCESS_KEY\n    value: "{v}"'),
        ("en", "linebreak", "Secret access key\n{v}"),
        ("en", "plain", "boto3.client('s3', aws_secret_access_key='{v}')"),
        ("en", "plain", "I rotated it, the new AWS secret is {v}"),
        ("en", "plain", 'Terraform var: aws_secret_key="{v}"'),
        ("zh", "plain", "AWS 的 SecretAccessKey：{v}"),
        ("zh", "plain", "私密访问密钥是 {v}，别提交到仓库"),
        ("zh", "linebreak", "S3 的 secret key：\n{v}"),
        ("zh", "plain", "秘密存取金鑰：{v}"),
        ("zh", "json", '凭证：{{"SecretAccessKey": "{v}"}}'),
        ("zh", "plain", "{n}，aws_secret_access_key 填 {v}"),
        ("zh", "plain", "亚马逊云的 secret 换成了 {v}，记得更新流水线"),
        ("zh", "plain", "配置里 AWS_SECRET_ACCESS_KEY={v} 是生产的"),
        ("zh", "plain", "备份桶的访问密钥 Secret：{v}"),
        ("zh", "plain", "報錯 SignatureDoesNotMatch，我用的 secret 是 {v}"),
    ],
    "github_token": [
        ("en", "plain", "export GITHUB_TOKEN={v}"),
        ("en", "plain", "git remote set-url origin https://{v}@github.com/acme/app.git"),
        ("en", "plain", 'curl -H "Authorization: token {v}" https://api.github.com/user/repos'),
        ("en", "plain", "my PAT is {v}, the action still says Bad credentials"),
        ("en", "markdown", "```yaml\n- uses: actions/checkout@v4\n  with:\n    token: {v}\n```"),
        ("en", "plain", "gh auth login --with-token <<< {v}"),
        ("en", "json", '{{"github": {{"token": "{v}"}}}}'),
        ("en", "linebreak", "Personal access token (classic):\n{v}"),
        ("en", "plain", "npm config set //npm.pkg.github.com/:_authToken {v}"),
        ("en", "plain", "Renovate bot token: {v} (scopes: repo, workflow)"),
        ("zh", "plain", "GitHub 令牌：{v}"),
        ("zh", "plain", "这是我的 GitHub token {v}，帮我看下为啥推不上去"),
        ("zh", "linebreak", "个人访问令牌：\n{v}"),
        ("zh", "plain", "{n}，CI 里的 GITHUB_TOKEN 换成 {v}"),
        ("zh", "plain", "仓库地址写成 https://{v}@github.com/team/repo.git 就能拉了"),
        ("zh", "plain", "GitHub 存取權杖為 {v}，下週到期"),
        ("zh", "json", '配置：{{"githubToken": "{v}"}}'),
        ("zh", "plain", "机器人账号的 PAT 是【{v}】"),
        ("zh", "plain", "把 {v} 填到 Settings → Secrets 里"),
        ("zh", "plain", "新生成的 GitHub 令牌（只读）：{v}"),
    ],
    "slack_token": [
        ("en", "plain", "SLACK_BOT_TOKEN={v}"),
        (
            "en",
            "plain",
            'curl -H "Authorization: Bearer {v}" https://slack.com/api/chat.postMessage',
        ),
        ("en", "plain", "the alert bot uses {v}, can you check its scopes?"),
        ("en", "json", '{{"slack": {{"bot_token": "{v}", "channel": "#alerts"}}}}'),
        ("en", "markdown", '```python\napp = App(token="{v}")\n```'),
        ("en", "linebreak", "Bot User OAuth Token\n{v}"),
        ("en", "plain", "slack_sdk.errors.SlackApiError: invalid_auth (token={v})"),
        ("en", "plain", "  slack:\n    token: {v}\n    channel: ops"),
        ("en", "plain", "Fwd from Tom: new socket mode token {v}"),
        ("en", "plain", 'SLACK_APP_TOKEN="{v}"'),
        ("zh", "plain", "Slack 机器人 token：{v}"),
        ("zh", "plain", "告警机器人的令牌是 {v}，发不出消息了"),
        ("zh", "linebreak", "Slack 的 Bot Token：\n{v}"),
        ("zh", "plain", "{n}，把 SLACK_BOT_TOKEN 改成 {v}"),
        ("zh", "json", '配置：{{"slackToken": "{v}"}}'),
        ("zh", "plain", "Slack 權杖 {v} 已經過期了嗎？"),
        ("zh", "plain", "通知渠道用的 token【{v}】"),
        ("zh", "plain", "这个 Slack 用户令牌 {v} 权限太大了"),
        ("zh", "plain", "部署脚本里写死了 slack token={v}"),
        ("zh", "plain", "新建的 Slack 应用令牌：{v}"),
    ],
    "google_api_key": [
        ("en", "plain", "GOOGLE_MAPS_API_KEY={v}"),
        ("en", "url", "https://maps.googleapis.com/maps/api/geocode/json?address=Shanghai&key={v}"),
        (
            "en",
            "plain",
            '<script src="https://maps.googleapis.com/maps/api/js?key={v}&callback=init"></script>',
        ),
        ("en", "plain", 'firebase config apiKey: "{v}"'),
        ("en", "json", '{{"apiKey": "{v}", "projectId": "demo-app-7781"}}'),
        ("en", "plain", "our Gemini key is {v}, quota exceeded again"),
        ("en", "linebreak", "Google API key\n{v}"),
        ("en", "plain", 'genai.configure(api_key="{v}")'),
        ("en", "markdown", '```js\nconst firebaseConfig = {{ apiKey: "{v}" }};\n```'),
        ("en", "plain", "YouTube Data API key {v} returns 403 forbidden"),
        ("zh", "plain", "谷歌地图的 key：{v}"),
        ("zh", "plain", "Firebase 配置里的 apiKey 是 {v}"),
        ("zh", "linebreak", "Google API 密钥：\n{v}"),
        ("zh", "plain", "{n}，Gemini 的 key 换成 {v} 试试"),
        (
            "zh",
            "url",
            "请求地址 https://www.googleapis.com/youtube/v3/search?part=snippet&key={v} 报 403",
        ),
        ("zh", "plain", "Google 地圖 API 金鑰：{v}"),
        ("zh", "json", '前端配置 {{"googleKey": "{v}"}}'),
        ("zh", "plain", "谷歌翻译接口用的 key【{v}】"),
        ("zh", "plain", "这个谷歌 key {v} 配额用完了"),
        ("zh", "plain", "把 GOOGLE_API_KEY={v} 加到 .env 里"),
    ],
    "jwt": [
        ("en", "plain", "Authorization: Bearer {v}"),
        ("en", "plain", "here is the id_token I got back: {v}"),
        ("en", "plain", "Cookie: session={v}; theme=dark"),
        ("en", "plain", "Set-Cookie: access_token={v}; Path=/; HttpOnly; Secure"),
        ("en", "json", '{{"access_token": "{v}", "token_type": "Bearer", "expires_in": 3600}}'),
        ("en", "plain", 'jwt.decode("{v}", options={{"verify_signature": False}})'),
        ("en", "linebreak", "JWT:\n{v}"),
        ("en", "plain", "localStorage.setItem('token', '{v}')"),
        ("en", "url", "https://app.acme-corp.cn/callback#id_token={v}&state=af0ifjsldkj"),
        ("en", "plain", "curl -H 'Authorization: Bearer {v}' https://api.acme-corp.cn/me"),
        ("zh", "plain", "登录接口返回的 token：{v}"),
        ("zh", "plain", "{n}，用这个 JWT 调一下 {v}"),
        ("zh", "linebreak", "令牌如下：\n{v}"),
        ("zh", "plain", "请求头里带 Authorization: Bearer {v} 还是 401"),
        ("zh", "json", '接口返回：{{"code": 0, "data": {{"token": "{v}"}}}}'),
        ("zh", "plain", "浏览器 Cookie 里的 session={v}"),
        ("zh", "plain", "這個 JWT {v} 解出來過期時間不對"),
        ("zh", "plain", "小程序登录态 token【{v}】"),
        ("zh", "plain", "抓包看到的 access_token={v}"),
        ("zh", "plain", "把这个身份令牌 {v} 放到 header 里"),
    ],
    "bearer_token": [
        ("en", "plain", "Authorization: Bearer {v}"),
        ("en", "plain", 'curl -H "Authorization: Bearer {v}" https://api.acme-corp.cn/v1/orders'),
        ("en", "plain", 'headers = {{"Authorization": f"Bearer {v}"}}'),
        ("en", "json", '{{"access_token": "{v}", "token_type": "bearer"}}'),
        ("en", "plain", "the service account bearer token is {v}"),
        ("en", "linebreak", "Bearer token\n{v}"),
        ("en", "plain", "  auth:\n    type: bearer\n    token: {v}"),
        ("en", "plain", "> GET /admin HTTP/2\n> authorization: bearer {v}\n< HTTP/2 403"),
        ("en", "plain", "export API_BEARER={v}"),
        ("en", "markdown", "```http\nPOST /graphql\nAuthorization: Bearer {v}\n```"),
        ("zh", "plain", "请求头：Authorization: Bearer {v}"),
        ("zh", "plain", "访问令牌是 {v}，有效期一天"),
        ("zh", "linebreak", "Bearer 令牌：\n{v}"),
        ("zh", "plain", '{n}，用 curl -H "Authorization: Bearer {v}" 试一下'),
        ("zh", "json", '授权接口返回 {{"access_token": "{v}"}}'),
        ("zh", "plain", "存取權杖：{v}"),
        ("zh", "plain", "网关日志里打印了 Bearer {v}，要赶紧处理"),
        ("zh", "plain", "服务间调用的令牌【{v}】"),
        ("zh", "plain", "接口文档里的测试 token={v} 是真的能用的"),
        ("zh", "plain", "OAuth 拿到的访问令牌 {v} 怎么刷新"),
    ],
    "private_key": [
        ("en", "plain", "here's the deploy key, can you add it to the server?\n{v}"),
        ("en", "markdown", "```\n{v}\n```"),
        ("en", "plain", "cat ~/.ssh/id_rsa\n{v}"),
        ("en", "plain", "tls.key: |\n{v}"),
        ("en", "plain", "Error loading key, file contents:\n{v}\nunsupported format"),
        ("en", "plain", "Fwd: server cert bundle\n\nKey:\n{v}"),
        ("en", "plain", 'PRIVATE_KEY="{v}"'),
        ("en", "plain", "I generated this with openssl genrsa, is it right?\n{v}"),
        ("en", "plain", "vault kv put secret/tls key=@- <<EOF\n{v}\nEOF"),
        ("en", "plain", "Ticket 9021 attachment (key.pem):\n{v}"),
        ("zh", "plain", "这是服务器的私钥，帮我配一下 nginx：\n{v}"),
        ("zh", "markdown", "私钥内容：\n```\n{v}\n```"),
        ("zh", "plain", "{n}发来的 SSH 私钥\n{v}"),
        ("zh", "plain", "證書私鑰如下：\n{v}"),
        ("zh", "plain", "报错说私钥格式不对，内容是\n{v}"),
        ("zh", "plain", "支付宝应用私钥：\n{v}"),
        ("zh", "plain", "把这段私钥放到 /etc/ssl/private/ 下面\n{v}"),
        ("zh", "plain", "堡垒机登录用的密钥文件：\n{v}"),
        ("zh", "plain", "微信支付商户私钥（apiclient_key.pem）\n{v}"),
        ("zh", "plain", "这个 key 是不是 PKCS8 的？\n{v}"),
    ],
    "secret": [
        ("en", "plain", "client_secret={v}"),
        ("en", "plain", "the webhook signing secret is {v}"),
        ("en", "plain", 'JWT_SECRET_KEY="{v}"'),
        ("en", "json", '{{"client_id": "app-4471", "client_secret": "{v}"}}'),
        ("en", "plain", "SECRET_KEY = '{v}'  # django settings"),
        ("en", "linebreak", "Client secret:\n{v}"),
        ("en", "markdown", "| app | client secret |\n|---|---|\n| portal | {v} |"),
        ("en", "plain", "  data:\n    encryption_key: {v}"),
        ("en", "plain", "HMAC signing key for callbacks: {v}"),
        ("en", "plain", "Our OAuth app secret got posted in #general: {v}"),
        ("zh", "plain", "AppSecret：{v}"),
        ("zh", "plain", "签名密钥是 {v}，回调验签用"),
        ("zh", "linebreak", "小程序的 AppSecret：\n{v}"),
        ("zh", "plain", "{n}，加密用的密钥换成 {v}"),
        ("zh", "plain", "企业微信应用 Secret：{v}"),
        ("zh", "plain", "商户 API 密钥【{v}】"),
        ("zh", "json", '配置：{{"appId": "wx8f2a1c", "appSecret": "{v}"}}'),
        ("zh", "plain", "用戶端密鑰：{v}"),
        ("zh", "plain", "钉钉机器人加签密钥 {v}"),
        ("zh", "plain", "会话加密的令牌密钥设置为 {v}"),
        ("zh", "plain", "回調驗簽的密鑰是「{v}」"),
    ],
    "email": [
        ("en", "plain", "please reply to {v} with the signed contract"),
        (
            "en",
            "plain",
            "From: {v}\nSubject: refund for order 2211\n\nHi team, please refund the duplicate charge.",
        ),
        ("en", "plain", "my personal email is {v}, not the work one"),
        ("en", "json", '{{"name": "customer", "email": "{v}"}}'),
        ("en", "plain", 'git config user.email "{v}"'),
        ("en", "linebreak", "Contact email:\n{v}"),
        ("en", "markdown", "| name | email |\n|---|---|\n| on-call | {v} |"),
        ("en", "plain", "[WARN] bounce for <{v}>: mailbox full"),
        ("en", "plain", "On Tue, Dec 1, {v} wrote:\n> sounds good"),
        ("en", "plain", "CC {v} on the invoice please"),
        ("zh", "plain", "我的邮箱是 {v}，发我就行"),
        ("zh", "plain", "联系人邮箱：{v}"),
        ("zh", "linebreak", "简历请投递至\n{v}"),
        ("zh", "plain", "{n}，把报价单发到 {v}"),
        ("zh", "plain", "電子郵件：{v}"),
        ("zh", "json", '客户资料 {{"姓名": "王某", "邮箱": "{v}"}}'),
        ("zh", "plain", "有问题发邮件给（{v}）"),
        ("zh", "plain", "注册用的邮箱【{v}】收不到激活邮件"),
        ("zh", "plain", "請寄到 {v} 謝謝"),
        ("zh", "plain", "发票抬头已改，电子发票发送至 {v}"),
    ],
    "phone": [
        ("en", "plain", "call me at {v} if the deploy breaks"),
        ("en", "plain", "Customer phone: {v}"),
        ("en", "json", '{{"name": "courier", "phone": "{v}"}}'),
        ("en", "linebreak", "Mobile:\n{v}"),
        ("en", "plain", "my number changed, it's {v} now"),
        ("en", "markdown", "| on-call | phone |\n|---|---|\n| week 49 | {v} |"),
        ("en", "plain", "Ticket 5530: caller left a callback number {v}"),
        ("en", "plain", "Tel: {v} (after 6pm)"),
        ("en", "plain", "send the SMS alert to {v}"),
        ("en", "plain", "contact_phone={v}"),
        ("zh", "plain", "我的手机号是 {v}，有事打我"),
        ("zh", "plain", "收货人：张女士 电话：{v}"),
        ("zh", "linebreak", "联系方式\n{v}"),
        ("zh", "plain", "{n}的电话 {v}，到了给他打"),
        ("zh", "plain", "手機：{v}"),
        ("zh", "plain", "快递员电话（{v}）一直打不通"),
        ("zh", "json", '订单信息 {{"收件人": "刘先生", "手机": "{v}"}}'),
        ("zh", "plain", "报名请加微信或致电【{v}】"),
        ("zh", "plain", "聯絡電話 {v}，請在工作時間來電"),
        ("zh", "plain", "紧急联系人手机号码：{v}"),
    ],
    "cn_id": [
        ("en", "plain", "ID number for the hotel booking: {v}"),
        ("en", "plain", "Customer national ID: {v}"),
        ("en", "json", '{{"name": "Wang Fang", "id_card": "{v}"}}'),
        ("en", "linebreak", "Resident ID:\n{v}"),
        ("en", "plain", "KYC failed for id_no={v}, please re-check"),
        ("en", "markdown", "| employee | ID card |\n|---|---|\n| Li Wei | {v} |"),
        ("en", "plain", "passenger ID {v} for the train ticket"),
        ("en", "plain", "my Chinese ID is {v}, the form keeps rejecting it"),
        ("en", "plain", "[INFO] verify identity card={v} result=MISMATCH"),
        ("en", "plain", "Fwd: onboarding docs - ID {v}"),
        ("zh", "plain", "我的身份证号是 {v}"),
        ("zh", "plain", "身份证号码：{v}"),
        ("zh", "linebreak", "入住人身份证\n{v}"),
        ("zh", "plain", "{n}，帮我订张高铁票，身份证 {v}"),
        ("zh", "plain", "身分證字號：{v}"),
        ("zh", "json", '员工档案 {{"姓名": "陈杰", "证件号": "{v}"}}'),
        ("zh", "plain", "实名认证一直失败，证件号（{v}）没填错啊"),
        ("zh", "plain", "报销需要身份证号【{v}】"),
        ("zh", "plain", "居民身份證號碼 {v}"),
        ("zh", "plain", "社保登记：公民身份号码 {v}"),
    ],
    "bank_card": [
        ("en", "plain", "card number {v}, exp 09/28"),
        ("en", "plain", "please refund to my card {v}"),
        ("en", "json", '{{"pan": "{v}", "holder": "LI WEI"}}'),
        ("en", "linebreak", "Card number:\n{v}"),
        ("en", "plain", "Payment failed for card {v}: do not honor"),
        ("en", "markdown", "| vendor | card |\n|---|---|\n| AWS | {v} |"),
        ("en", "plain", "use the company card {v} for the conference tickets"),
        ("en", "plain", "Ticket 7781: customer typed full PAN {v} in chat"),
        ("en", "plain", "CC# {v}"),
        ("en", "plain", "wire it to account {v} (bank of china)"),
        ("zh", "plain", "我的银行卡号是 {v}，工资打这里"),
        ("zh", "plain", "收款卡号：{v}"),
        ("zh", "linebreak", "退款请打到这张卡\n{v}"),
        ("zh", "plain", "{n}，报销款转到 {v}"),
        ("zh", "plain", "信用卡號：{v}"),
        ("zh", "json", '付款信息 {{"开户行": "工商银行", "卡号": "{v}"}}'),
        ("zh", "plain", "开户行招商银行，账号（{v}）"),
        ("zh", "plain", "房租转账到【{v}】户名张三"),
        ("zh", "plain", "銀行帳號 {v}，請確認"),
        ("zh", "plain", "信用卡 {v} 被盗刷了怎么办"),
    ],
}

GEN: dict[str, Callable[[], str]] = {
    "password": v_password,
    "basic_auth": v_url_password,
    "api_key": v_api_key,
    "aws_access_key": v_aws_access,
    "aws_secret_key": v_aws_secret,
    "github_token": v_github,
    "slack_token": v_slack,
    "google_api_key": v_google,
    "jwt": v_jwt,
    "bearer_token": v_bearer,
    "private_key": v_private_key,
    "secret": v_secret,
    "email": v_email,
    "phone": v_phone,
    "cn_id": v_cn_id,
    "bank_card": v_card,
}

KIND_ABBR = {
    "password": "pw", "basic_auth": "ba", "api_key": "ak", "aws_access_key": "awsa", "aws_secret_key": "awss",
    "github_token": "gh", "slack_token": "sl", "google_api_key": "gg", "jwt": "jwt", "bearer_token": "br",
    "private_key": "pk", "secret": "sec", "email": "em", "phone": "ph", "cn_id": "id", "bank_card": "card",
}  # fmt: skip

# -------------------------------------------------------------- value encodings

FW = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}


def to_fullwidth(v: str) -> str:
    return "".join(FW.get(c, c) for c in v)


def with_zerowidth(v: str) -> str:
    pos = sorted(rng.sample(range(1, len(v)), k=min(3, len(v) - 1)))
    out, last = [], 0
    for p in pos:
        out.append(v[last:p])
        out.append(rng.choice(ZW))
        last = p
    out.append(v[last:])
    return "".join(out)


def spaced_digits(kind: str, v: str) -> str:
    if kind == "bank_card":
        return " ".join(v[i : i + 4] for i in range(0, len(v), 4))
    if kind == "cn_id":
        return f"{v[:6]} {v[6:14]} {v[14:]}"
    return " ".join(v)  # a phone typed digit by digit


def encode_value(kind: str, v: str, enc: str) -> str:
    if enc == "fullwidth":
        return to_fullwidth(v)
    if enc == "zerowidth":
        return with_zerowidth(v)
    if enc == "spacing":
        return spaced_digits(kind, v)
    return v


def secret_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for kind, templates in SECRET_TEMPLATES.items():
        counters: dict[str, int] = {}
        for lang, tenc, tmpl in templates:
            counters[lang] = counters.get(lang, 0) + 1
            phrasing = f"{lang}-{KIND_ABBR[kind]}-{counters[lang]:02d}"
            # Round 1: the template as written. Round 2: a fresh value, re-encoded when the
            # template is plain text (full-width, zero-width, or spaced digits).
            for rnd in (1, 2):
                raw = GEN[kind]()
                enc = tenc
                if rnd == 2 and tenc == "plain" and kind != "private_key":
                    if kind in {"bank_card", "cn_id"} or (kind == "phone" and raw.isdigit()):
                        enc = rng.choice(["spacing", "spacing", "fullwidth", "zerowidth"])
                    elif kind in {
                        "password",
                        "email",
                        "secret",
                        "api_key",
                        "aws_access_key",
                        "github_token",
                    }:
                        enc = rng.choice(["fullwidth", "zerowidth", "plain"])
                    else:
                        enc = rng.choice(["zerowidth", "plain"])
                v = encode_value(kind, raw, enc)
                text = fill(tmpl, v)
                assert v in text
                rows.append({
                    "lang": lang, "kind": kind, "encoding": enc, "phrasing": phrasing,
                    "lookalike": "", "text": text, "secrets": [{"kind": kind, "value": v}],
                })  # fmt: skip
    return rows


# ------------------------------------------------------------- benign look-alikes


def digits_failing(n: int, prefix: str = "") -> str:
    """n digits starting with prefix that fail Luhn and, at 18 digits, GB 11643."""
    while True:
        s = prefix + rs(string.digits, n - len(prefix))
        if luhn_ok(s) or (n == 18 and gb_ok(s)):
            continue
        return s


def b_order18() -> str:
    return digits_failing(18, f"2026{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}")


def b_order16() -> str:
    return digits_failing(16, "2026")


def few_digits(make: Callable[[], str]) -> str:
    """A hex id without a long digit run, so no part of it reads as a number of its own."""
    while True:
        h = make()
        if not re.search(r"[0-9]{7}", h):
            return h


def b_sha256() -> str:
    return few_digits(lambda: hashlib.sha256(rs(ALNUM, 20).encode()).hexdigest())


def b_sha1() -> str:
    return few_digits(lambda: hashlib.sha1(rs(ALNUM, 20).encode()).hexdigest())


def b_price() -> str:
    return f"{rng.randint(9, 8999)}.{rng.choice(['00', '99', '50', '90'])}"


def b_date() -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def b_version() -> str:
    return f"{rng.randint(0, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 19)}"


def b_tokens() -> str:
    return str(rng.randint(120, 180000))


def b_short_sha() -> str:
    return rs(HEX, 7)


def b_tracking() -> str:
    return "SF" + digits_failing(13)


def b_invoice() -> str:
    return f"INV-2026-{rng.randint(1, 99999):05d}"


def b_ticket() -> str:
    return str(rng.randint(1000, 99999))


def b_isbn() -> str:
    while True:  # a valid ISBN-13 whose 13 digits do not also pass Luhn
        body = "978" + rs(string.digits, 9)
        s = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body))
        full = body + str((10 - s % 10) % 10)
        if not luhn_ok(full):
            return f"{full[:3]}-{full[3]}-{full[4:8]}-{full[8:12]}-{full[12]}"


def b_pct() -> str:
    return f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%"


def b_port() -> str:
    return str(rng.choice([5432, 6379, 8080, 3000, 9200, 27017, 443]))


def b_ms() -> str:
    return str(rng.randint(3, 4800))


def b_count() -> str:
    return str(rng.randint(2, 5000))


def b_few() -> str:
    return str(rng.randint(1, 9))


def b_uuid_req() -> str:
    return few_digits(
        lambda: f"{rs(HEX, 8)}-{rs(HEX, 4)}-4{rs(HEX, 3)}-a{rs(HEX, 3)}-{rs(HEX, 12)}"
    )


BF: dict[str, Callable[[], str]] = {
    "order18": b_order18, "order16": b_order16, "sha256": b_sha256, "sha1": b_sha1, "price": b_price,
    "date": b_date, "ver": b_version, "tok": b_tokens, "sha7": b_short_sha, "track": b_tracking,
    "inv": b_invoice, "tkt": b_ticket, "isbn": b_isbn, "pct": b_pct, "port": b_port, "ms": b_ms,
    "cnt": b_count, "req": b_uuid_req, "few": b_few,
}  # fmt: skip

# (lang, lookalike, template). Placeholders name generators in BF.
BENIGN_TEMPLATES: list[tuple[str, str, str]] = [
    (
        "en",
        "password_reset_notice",
        'Forgot your password? Click "Reset password" on the sign-in page and follow the link we email you. Order ref {inv}.',
    ),
    (
        "en",
        "password_policy",
        "Passwords must be at least 12 characters and include a number. Policy updated {date}.",
    ),
    (
        "en",
        "password_error",
        "Error: incorrect password. You have {few} attempts left before the account locks for 15 minutes.",
    ),
    ("en", "order_number", "Your order #{order18} has shipped and should arrive by {date}."),
    (
        "en",
        "tracking_number",
        "Tracking number {track}, last scan: Shenzhen sorting center, {date}.",
    ),
    ("en", "invoice_number", "Invoice {inv} for ${price} is due on {date}."),
    ("en", "price", "The annual plan costs ${price}; the monthly plan is ${price}."),
    (
        "en",
        "token_count",
        "usage: prompt_tokens={tok}, completion_tokens={tok}, total latency {ms} ms",
    ),
    ("en", "version", "Upgraded memstrata from {ver} to {ver}; all {cnt} tests pass."),
    (
        "en",
        "commit_message",
        "commit {sha7}: fix password reset email template typo (closes #{tkt})",
    ),
    ("en", "file_hash", "sha256 checksum of the public release tarball app-{ver}.tar.gz: {sha256}"),
    ("en", "git_sha", "Reverting {sha1}, it broke the token counter in the billing dashboard."),
    ("en", "isbn", "The book is ISBN {isbn}, published {date}."),
    ("en", "date", "Standup moved to {date} at 10:30 UTC, same room."),
    ("en", "metrics", "p95 latency {ms} ms, error rate {pct}, cache hit ratio {pct}"),
    ("en", "request_id", "Request {req} took {ms} ms (status 200)."),
    (
        "en",
        "placeholder",
        "Set DB_PASSWORD in your .env file; never commit the real value. See docs updated {date}.",
    ),
    ("en", "env_reference", "password: ${{DB_PASSWORD}}\nport: {port}\npool_size: {cnt}"),
    (
        "en",
        "doc_sentence",
        "The API key is sent in the X-Api-Key header. Keys can be rotated from the dashboard (v{ver}).",
    ),
    (
        "en",
        "order_number",
        "Ticket {tkt}: customer asks about order {order16}, shipped {date}, amount ${price}.",
    ),
    ("en", "log_line", "[{date} 08:14:02] INFO worker started pid={tkt} port={port} jobs={cnt}"),
    ("en", "token_count", "Context window: {tok} tokens used of 200000 ({pct})."),
    ("en", "masked_password", "Password: ******** (hidden). Use the reset link to set a new one."),
    (
        "en",
        "auth_docs",
        "To authenticate, send an Authorization header with the Bearer scheme; tokens expire after {cnt} seconds.",
    ),
    ("en", "pr_title", "PR #{tkt}: rename secret_key setting to signing_key_path, bump to {ver}"),
    (
        "en",
        "changelog",
        "## {ver} ({date})\n- Faster token counting\n- Password field now shows strength meter",
    ),
    ("en", "table_prices", "| plan | price |\n|---|---|\n| basic | ${price} |\n| pro | ${price} |"),
    (
        "en",
        "stack_trace",
        "Traceback (most recent call last):\n  File \"app.py\", line {cnt}, in handler\nKeyError: 'api_key'",
    ),
    ("en", "http_status", "GET /v1/orders/{tkt} 200 {ms}ms\nPOST /v1/login 401 {ms}ms"),
    ("en", "config_no_secret", "server:\n  port: {port}\n  workers: {few}\n  log_level: info"),
    ("zh", "password_error", "密码错误，您还有{few}次尝试机会"),
    ("zh", "password_reset_notice", "忘记密码？请点击登录页的“找回密码”，按提示重置。"),
    ("zh", "password_policy", "密码长度至少8位，需包含字母和数字（{date}起生效）"),
    ("zh", "order_number", "您的订单号 {order18} 已发货，预计{date}送达"),
    ("zh", "tracking_number", "顺丰快递单号：{track}，已到达转运中心"),
    ("zh", "price", "这款耳机现价 ¥{price}，原价 ¥{price}，限时优惠"),
    ("zh", "invoice_number", "发票编号 {inv}，金额 ¥{price}，开票日期 {date}"),
    ("zh", "version", "已将客户端升级到 {ver} 版本，修复了登录页闪退"),
    ("zh", "token_count", "本次对话消耗 {tok} 个 token，费用约 ¥{price}"),
    ("zh", "date", "会议改到 {date} 下午三点，地点不变"),
    ("zh", "commit_message", "提交 {sha7}：修复修改密码页面的样式问题 (#{tkt})"),
    ("zh", "file_hash", "官网下载的安装包 setup-{ver}.exe 的 SHA256 校验值：{sha256}"),
    ("zh", "metrics", "接口平均耗时 {ms} 毫秒，成功率 {pct}"),
    ("zh", "order_number", "订单编号：{order16}，下单时间 {date}，实付 ¥{price}"),
    ("zh", "password_reset_notice", "您的密码已于 {date} 修改成功，如非本人操作请联系客服。"),
    ("zh", "masked_password", "登录密码：******（已隐藏），如需修改请前往安全设置"),
    ("zh", "doc_sentence", "调用接口时需要在请求头中携带 API Key，密钥可在控制台重置。"),
    ("zh", "isbn", "这本书的 ISBN 是 {isbn}，{date} 出版"),
    ("zh", "log_line", "[{date} 09:30:11] 信息 任务完成，共处理 {cnt} 条记录，耗时 {ms} 毫秒"),
    ("zh", "placeholder", "请在 .env 中配置 DB_PASSWORD，不要把真实密码提交到仓库。"),
    ("zh", "password_error", "密碼錯誤，請重新輸入（剩餘 {few} 次）"),
    ("zh", "order_number", "您的訂單編號 {order18} 已出貨，預計 {date} 到貨"),
    ("zh", "price", "這件外套售價 NT${price}，會員再打九折"),
    ("zh", "password_reset_notice", "忘記密碼了嗎？請點選「重設密碼」並依照指示操作。"),
    (
        "zh",
        "table_prices",
        "| 套餐 | 价格 |\n|---|---|\n| 基础版 | ¥{price} |\n| 专业版 | ¥{price} |",
    ),
    ("zh", "request_id", "请求ID {req} 处理完成，耗时 {ms} 毫秒"),
    ("zh", "changelog", "## {ver}（{date}）\n- 优化 token 统计\n- 密码输入框支持显示/隐藏"),
    (
        "zh",
        "stack_trace",
        "报错了：KeyError: 'password'，在 login.py 第 {cnt} 行，是不是字段名写错了",
    ),
    ("mixed", "token_count", "这个 prompt 大概 {tok} tokens，context 还够"),
    ("mixed", "version", "Python 升到 3.12 之后 pip install 报错，memstrata 版本 {ver}"),
    ("mixed", "password_reset_notice", "用户反馈 reset password 的邮件收不到，ticket {tkt}"),
    ("mixed", "git_sha", "回滚到 {sha1} 这个 commit 就好了"),
    (
        "mixed",
        "config_no_secret",
        'docker-compose 里 ports 写的是 "{port}:{port}"，replicas: {few}',
    ),
    ("mixed", "auth_docs", "Authorization header 用 Bearer 方案，token 过期时间是 {cnt} 秒"),
]


def benign_rows() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    counters: dict[str, int] = {}
    for lang, look, tmpl in BENIGN_TEMPLATES:
        counters[lang] = counters.get(lang, 0) + 1
        phrasing = f"{lang}-benign-{counters[lang]:02d}"
        for _ in range(8):
            # Each placeholder in a template draws afresh per row.
            text = tmpl
            for name, f in BF.items():
                while "{" + name + "}" in text:
                    text = text.replace("{" + name + "}", f(), 1)
            text = text.replace("{{", "{").replace("}}", "}")
            rows.append({
                "lang": lang, "kind": "benign", "encoding": "plain", "phrasing": phrasing,
                "lookalike": look, "text": text, "secrets": [],
            })  # fmt: skip
    return rows


def build() -> str:
    rows = secret_rows() + benign_rows()
    random.Random(SEED + 1).shuffle(rows)
    lines = []
    for i, row in enumerate(rows, 1):
        obj = {"id": f"blind2-{i:04d}", "split": "blind2", **row}
        lines.append(json.dumps(obj, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    data = build()
    if "--check" in argv:
        same = OUT.read_text(encoding="utf-8") == data
        print("blind2.jsonl is current" if same else "blind2.jsonl differs from the generator")
        return 0 if same else 1
    OUT.write_text(data, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {data.count(chr(10))} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
