"""What the privacy scan looks for: secret and PII patterns, and the validators behind them.

Every pattern is an RE2 regular expression that DuckDB runs over raw record text, set-at-a-time. The
text is JSON as written, so patterns never cross a `"` (a match stays inside one JSON string) and allow
JSON's escaped slash (`\\/`) where a URL may hold one. Patterns that over-match on their own (card
numbers, phone numbers, IBANs, ids with a checksum, IP addresses) have a validator: DuckDB hands the
distinct candidate strings, never whole records, to it in Python.
"""

import base64
import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

import phonenumbers
from stdnum import iban, luhn
from stdnum.es import dni
from stdnum.it import codicefiscale
from stdnum.se import personnummer
from stdnum.us import ssn


@dataclass(frozen=True)
class Pattern:
    kind: str  # the reason suffix: secret:<kind> or pii:<kind>
    category: str  # 'secret' (the trace is quarantined) or 'pii' (redacted, or quarantined on request)
    regex: str  # RE2, without a leading word boundary: LEAD supplies it
    placeholder: str = ""  # PII only: what replaces the match
    validate: Callable[[str], bool] | None = None
    # A cheap expression every match contains, for the first pass instead of `regex` (see prefilter)
    hint: str = ""
    # Fixed text every match contains (RE2; a few alternatives at most), which RE2 finds by jumping from
    # one occurrence to the next: only texts holding it are searched for the pattern in context (LEAD),
    # which reads every byte (see privacy.find). '' for a pattern without such text.
    guard: str = ""


def _digits(s: str) -> str:
    return re.sub(r"\D", "", s)


_CARD_PREFIXES = re.compile(r"^(4|5[1-5]|2(2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(0[0-5]|[68])|6(011|5|4[4-9]|2)|35(2[89]|[3-8]\d))")


def _card(s: str) -> bool:
    d = _digits(s)
    return 13 <= len(d) <= 19 and bool(_CARD_PREFIXES.match(d)) and luhn.is_valid(d)


def _phone(s: str) -> bool:
    try:
        number = phonenumbers.parse(s, None if s.lstrip().startswith("+") else "US")
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)


def _ip(s: str) -> bool:
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return False
    return not (addr.is_unspecified or addr.is_loopback)


def _entropy(s: str) -> float:
    counts = Counter(s)
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


# What producers and people write in place of a secret: masks, variables, template slots, empty words.
_PLACEHOLDER_VALUE = re.compile(
    r"^([*xX•.\-_#…]+|<[^>]*>|\[[^\]]*\]|\([^)]*\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%\(?[a-z_]+\)?s?"
    r"|null|none|nil|true|false|undefined|n/?a|empty|unset|hidden|masked|omitted|changeme\b.*|your[-_ ].*"
    # the last: our own marker `[SECRET:<kind>#<hash>]` read from its colon, with what follows it up to a
    # space or a quote (`@host` of a URL whose password it replaced): the scan took any secret out of that
    r"|[a-z0-9_]+#[0-9a-f]{8}\].*"
    # or a value that begins with a marker: a keyed value longer than a match takes (256 characters, a
    # long cookie) lost its first part, which is what the scan took for the secret
    r"|\[SECRET:[a-z0-9_]+#[0-9a-f]{8}\].*)$", re.I)
# A mask inside a value (`sk-…REDACTED`, `ghp_****`, `AKIAXXXXXXXXXXXXXXXX`): shown, not usable.
_MASKED = re.compile(r"redacted|\*{3,}|•{3,}|…|x{4,}", re.I)
_SCHEME = re.compile(r"^(?:bearer|basic|token|digest)\s+", re.I)


# Code where a secret would go: a name (`args.api_key`, `settings.db.password`, `db_password`), a call
# (`_basic_auth_str(user, pw)`, `requests.Session()`), a format slot (`{password}`, `%(pw)s`, `f"{pw}"`):
# where the secret comes from, not the secret.
_CODE_REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$"
                             r"|^[a-z_][a-z0-9]*(_[a-z0-9]+)+$"
                             r"|^[A-Za-z_][A-Za-z0-9_.]*(\(|\[)"
                             r"|^f?\{[^{}]*\}$|^f[\"'].*\{")
# The words tests and documentation put where a secret would go (`test_password`, `foo:bar`,
# `user:pass`, `changeme`, `test123`): a value made of these alone, and short numbers, is no secret.
_FAKE_WORDS = frozenset({"test", "tests", "testing", "dummy", "fake", "example", "sample", "demo", "foo", "bar",
                         "baz", "qux", "mock", "placeholder", "changeme", "password", "passwd", "pass", "pwd",
                         "secret", "user", "username", "admin", "my", "your", "some", "abc", "xyz", "letmein"})


def _fake(value: str) -> bool:
    """A value tests and docs use for a secret: fake words (a percent-encoded one decoded) and short numbers."""
    value = unquote(value).lower()
    runs = re.findall(r"[a-z]+", value)
    return bool(runs) and all(len(d) <= 6 for d in re.findall(r"\d+", value)) and (
        all(r in _FAKE_WORDS for r in runs) or "".join(runs) in _FAKE_WORDS)


# Words that say a value was made up for docs or tests, wherever they stand in it (`fake-key-for-testing`,
# `sk-example-0000`, `AKIA...EXAMPLE`, `my_dummy_token`): a scanner's stop words. A random key holds one of
# these by chance about once in a million.
_STOP_WORDS = re.compile(r"fake|test|example|dummy|sample|changeme|placeholder|notreal|not_real|redacted|xxx|your[-_]", re.I)
# A run of characters in order, as docs write them (`abcdef`, `123456789`, `ABCDEFGH`): no key is made so.
_SEQUENCES = ("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", "0123456789012345678901234567890",
              "9876543210987654321", "zyxwvutsrqponmlkjihgfedcba")


def _made_up(value: str) -> bool:
    """A value written to show where a secret goes, not a secret: it holds a stop word, is a run of one
    character (`aaaaaaaa`, `00000000`) or of characters in order, once its vendor prefix is set aside."""
    bare = re.sub(r"^(?:sk|pk|rk|gh[pousr]|glpat|xox[abposr]|AKIA|ASIA|AIza)[-_]?(?:live_|test_|proj-|ant-)?", "",
                  value, flags=re.I)
    letters = re.sub(r"[^A-Za-z0-9]", "", bare).lower()
    return bool(_STOP_WORDS.search(value)) or (len(letters) >= 4 and (
        len(set(letters)) <= 2 or any(letters in seq for seq in _SEQUENCES)))


# Keys that name a token every visitor of a page is given (a browser feature's trial token, a form's
# anti-forgery token, a script nonce): printed into public HTML by design, not a credential.
_PUBLIC_TOKEN_KEY = re.compile(r"origin_?trial|csrf|xsrf|authenticity_?token|nonce", re.I)


def placeholder(value: str) -> bool:
    """A value that stands in for a secret rather than being one (`REDACTED`, `***`, `${TOKEN}`,
    `args.api_key`, `requests.Session()`, `test_password`, ...)."""
    value = _SCHEME.sub("", value.strip(" \"'")).strip()
    return not value or bool(_PLACEHOLDER_VALUE.match(value) or _MASKED.search(value) or _CODE_REFERENCE.match(value)
                             or _fake(value) or _made_up(value) or _basic_fake(value))


def _basic_fake(value: str) -> bool:
    """A basic-auth value (base64 of `user:password`) whose password is a placeholder (`user:pass`)."""
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return False
    user, sep, password = decoded.partition(":")
    return bool(sep) and decoded.isprintable() and (_fake(password) or _made_up(password) or not password)


def _password_value(s: str) -> bool:
    """The value of a password=/secret: pair: real-looking, not a placeholder or a variable. A key in
    quotes is a field (`"password": "…"`), whose value counts as it is; in prose (`password: required`)
    the value must look like a credential."""
    key, value = re.split(r"[:=]", s, maxsplit=1)
    value = value.strip(" \"'")
    if (len(value) < 6 or placeholder(value) or _entropy(value) < 2.5
            or value.startswith(("/", "~", "./"))):  # `PWD=/home/…` is the shell's working directory
        return False
    return key.rstrip().endswith(('"', "'")) or _credential_like(value)


def _url_password(s: str) -> bool:
    """A password in a URL's user part (`postgres://admin:s3cret@db`), not a mask (`admin:***@db`)."""
    m = re.search(r"//[^:/@]*:([^@]+)@", s.replace("\\/", "/"))
    return bool(m) and not placeholder(m[1])


def _unmasked(s: str) -> bool:
    """A vendor-shaped key that is not a masked or made-up example of one."""
    value = _SCHEME.sub("", re.sub(r"(?i)^authorization[\"']?\s*[:=]\s*[\"']?", "", s))
    return not (_MASKED.search(s) or _made_up(value) or _basic_fake(value))


# Key names that make their value a secret, whatever the value looks like: the key is one of these or
# ends in one after a separator or a camelCase step (`db.password`, `x-api-key`, `OPENAI_API_KEY`,
# `dbPassword`). Keys as a producer writes them: object keys, OTLP attribute keys, header names.
SECRET_KEYS = ("password", "passwd", "passphrase", "pwd", "secret", "client_secret", "api_key", "apikey",
               "access_key", "secret_key", "private_key", "authorization", "credential", "credentials",
               "token", "session", "cookie", "set_cookie")
# Words that also name ordinary things (a logprob's `token`, a `session` name, the shell's `PWD`): their
# values must look like a credential too.
_LOOSE_KEYS = ("token", "session", "cookie", "set_cookie", "pwd")
# The key pattern in raw text: RE2 cannot see camelCase steps under (?i), so it takes any key that ends in
# a key word; _secret_key decides on the distinct candidates.
_KEY_WORD = r"(?i:pass(?:word|wd|phrase)|pwd|secret|api[-_]?key|access[-_]?key|secret[-_]?key" \
            r"|private[-_]?key|authori[sz]ation|credentials?|token|session|cookie)"
_KEY = r"[A-Za-z0-9_.\-]*" + _KEY_WORD
# What every keyed match holds: a key word, then (past a closing quote) a colon, equals sign, comma or
# closing bracket; or a `--…key` flag and a space.
_KEY_HINT = _KEY_WORD + r"""\\*["']?\s*[:=,}\]]|--[A-Za-z0-9_.\-]*""" + _KEY_WORD + r"\s"
_Q = r"""(?:\\*"|')"""  # a quote, or an escaped one in JSON written inside a JSON string
_V = r"""[^"'\\\n]+"""  # a value, up to the next quote or escape, however long
_PAIR_VALUE = _Q + r"(?i:value)" + _Q + r"\s*:\s*(?:\{\s*" + _Q + r"[A-Za-z]*(?i:value)" + _Q + r"\s*:\s*)?"


def _key_words(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower()).strip("_")


def _secret_key(key: str) -> str | None:
    """The key word that makes `key` name a secret, or None."""
    words = _key_words(key)
    for word in SECRET_KEYS:
        if words == word or words.endswith("_" + word):
            return word
    return None


def _credential_like(value: str) -> bool:
    """Looks made to be hard to guess: letters with digits, inner capitals or symbols. Not a date, a
    number, a path, or a word or identifier of prose (`required`, `sensitive_assignment`)."""
    value = value.rstrip(":.,")
    if (re.fullmatch(r"[\d\s\-:./TZ+]+", value) or value.startswith(("/", "~/", "./"))
            or re.fullmatch(r"[A-Za-z]+(-[A-Za-z]+)+", value)):  # words joined by hyphens: prose (`non-None`)
        return False
    return bool((re.search(r"\d", value) and re.search(r"[A-Za-z]", value))
                or re.search(r"[a-z].*[A-Z]|[A-Z].*[a-z].*[A-Z]", value[1:])
                or re.search(r"[!@#$%^&*+=~|]", value))


def keyed_secret(key: str, value: str, strict: bool) -> bool:
    """Is `value` a secret because `key` says so? `strict` for keys found in free text (`KEY=value`,
    `--key value`), where the value must look like a credential too."""
    word = _secret_key(key)
    if word is None or _PUBLIC_TOKEN_KEY.search(key):
        return False
    value = value.strip().strip("\"'")
    bare = _SCHEME.sub("", value).strip()
    if len(bare) < 6 or placeholder(value):
        return False
    if "cookie" not in word and len(bare.split()) >= 3:  # prose about a secret, not one
        return False
    if strict or word in _LOOSE_KEYS:
        return _credential_like(bare)
    return True


# Python twins of the RE2 expressions below, with the key and the value as named groups.
_FIELD_FORMS = [
    re.compile(r"(?P<k>" + _KEY + r")" + _Q + r"\s*:\s*" + _Q + r"(?P<v>" + _V + ")"),
    re.compile(r"(?i:key|name)" + _Q + r"\s*:\s*" + _Q + r"(?P<k>" + _KEY + r")" + _Q + r"\s*,\s*" + _PAIR_VALUE
               + _Q + r"(?P<v>" + _V + ")"),
    re.compile(_PAIR_VALUE + _Q + r"(?P<v>" + _V + ")" + _Q + r"\s*\}?\s*,\s*" + _Q + r"(?i:key|name)" + _Q
               + r"\s*:\s*" + _Q + r"(?P<k>" + _KEY + r")" + _Q),
    re.compile(r"\[\s*" + _Q + r"(?P<k>" + _KEY + r")" + _Q + r"\s*,\s*" + _Q + r"(?P<v>" + _V + ")"),
]
_ASSIGN_FORMS = [
    re.compile(r"(?:--)?(?P<k>" + _KEY + r")\s*[:=]\s*(?:\\?[\"'])?(?P<v>(?:(?i:bearer|basic|token)\s+)?[^\s\"'\\,;&]+)"),
    re.compile(r"--(?P<k>" + _KEY + r")\s+(?:\\?[\"'])?(?P<v>[^\s\"'\\,;&]+)"),
]


def _keyed(forms: list[re.Pattern], strict: bool) -> Callable[[str], bool]:
    def check(hit: str) -> bool:
        for form in forms:
            m = form.fullmatch(hit)
            if m and keyed_secret(m["k"], m["v"], strict):
                return True
        return False
    return check


_JSON_SLASH = r"\\?/"
_TOKEN = r"[A-Za-z0-9_\-.=~+/]"

PATTERNS: tuple[Pattern, ...] = (
    # A private key with its body (base64 lines, JSON's escaped line ends), so that redaction takes it all.
# (up to its END line; a key cut short, up to the first character no base64 line holds).
    Pattern("private_key", "secret", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\+[nrt])*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[A-Za-z0-9+/=\r\n]|\\+[nrt])*)", guard=r"-----BEGIN "),
    Pattern("aws_access_key", "secret", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", validate=_unmasked, guard=r"AKIA|ASIA|ABIA|ACCA"),
    Pattern("aws_secret_key", "secret", r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}", guard=r"(?i)aws_?secret"),
    Pattern("github_token", "secret", r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b", validate=_unmasked, guard=r"gh[pousr]_|github_pat_"),
    Pattern("gitlab_token", "secret", r"glpat-[A-Za-z0-9_\-]{20,}", validate=_unmasked, guard=r"glpat-"),
    Pattern("slack_token", "secret", r"xox[abposr]-[A-Za-z0-9\-]{10,}|hooks\.slack\.com" + _JSON_SLASH + r"services" + _JSON_SLASH + r"[A-Za-z0-9_]+", validate=_unmasked),
    Pattern("anthropic_key", "secret", r"sk-ant-[A-Za-z0-9_\-]{20,}", validate=_unmasked, guard=r"sk-ant-"),
    Pattern("openai_key", "secret", r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}", validate=_unmasked, guard=r"sk-"),
    Pattern("stripe_key", "secret", r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", validate=_unmasked, guard=r"k_(?:live|test)_"),
    Pattern("google_api_key", "secret", r"AIza[0-9A-Za-z_\-]{35}", validate=_unmasked, guard=r"AIza"),
    Pattern("jwt", "secret", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", validate=_unmasked, guard=r"eyJ"),
    Pattern("authorization_header", "secret", r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token)\s+" + _TOKEN + r"{12,}", validate=_unmasked, guard=r"(?i)authorization"),
    Pattern("bearer_token", "secret", r"(?i)bearer\s+" + _TOKEN + r"{20,}", validate=_unmasked, guard=r"(?i)bearer"),
    Pattern("url_password", "secret", r"[a-zA-Z][a-zA-Z0-9+.\-]*:" + _JSON_SLASH + _JSON_SLASH + r"[^\s:/@\"\\]+:[^\s/@\"\\]+@[A-Za-z0-9.\-]+",
            validate=_url_password, guard=r":\\?/\\?/"),
    Pattern("password", "secret", r"(?i)(?:password|passwd|pwd|passphrase|client_?secret|api_?key|secret_?key)[\"']?\s*[:=]\s*[\"']?[^\s\"',;&()\\]{6,}",
            validate=_password_value),
    # A value under a key that names a secret: an object key, an OTLP attribute or header {key|name, value}
    # in either order, a [name, value] header pair; in JSON as written or JSON inside a JSON string.
    Pattern("sensitive_field", "secret", "|".join(f"(?:{f.pattern.replace('?P<k>', '?:').replace('?P<v>', '?:')})"
                                                  for f in _FIELD_FORMS), validate=_keyed(_FIELD_FORMS, False), hint=_KEY_HINT),
    # The same in free text: environment dumps and shell commands (`export OPENAI_API_KEY=…`,
    # `--password …`), headers written out (`Cookie: session=…`).
    Pattern("sensitive_assignment", "secret", "|".join(f"(?:{f.pattern.replace('?P<k>', '?:').replace('?P<v>', '?:')})"
                                                       for f in _ASSIGN_FORMS), validate=_keyed(_ASSIGN_FORMS, True), hint=_KEY_HINT),
    Pattern("email", "pii", r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b", "<EMAIL>", guard="@"),
    # A card number starts as the issuers' prefixes do (_card checks them exactly): 2 (2221-2720), 3, 4, 5,
    # 6. Digit runs that start otherwise (the nanosecond timestamps of every OpenTelemetry span, epoch
    # milliseconds, zero-padded ids) are no candidates: the records that hold them skip the per-pattern scan.
    Pattern("card", "pii", r"(?:2[2-7]|[3-6]\d)(?:[ \-]?\d){11,17}\b", "<CARD>", _card),
    Pattern("iban", "pii", r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", "<IBAN>", iban.is_valid),
    Pattern("phone", "pii", r"\+\d{1,3}[ .\-]?\(?\d{1,4}\)?(?:[ .\-]?\d{2,4}){2,4}\b|\(?\d{3}\)?[ .\-]\d{3}[ .\-]\d{4}\b", "<PHONE>", _phone),
    Pattern("ip_address", "pii", r"(?:\d{1,3}\.){3}\d{1,3}\b|(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b|(?:[0-9A-Fa-f]{1,4}:){1,6}:(?:[0-9A-Fa-f]{1,4}:){0,5}[0-9A-Fa-f]{1,4}\b", "<IP>", _ip),
    Pattern("us_ssn", "pii", r"\d{3}-\d{2}-\d{4}\b", "<NATIONAL_ID>", ssn.is_valid),
    Pattern("es_dni", "pii", r"\d{8}-?[A-Z]\b", "<NATIONAL_ID>", dni.is_valid),
    Pattern("it_codice_fiscale", "pii", r"[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b", "<NATIONAL_ID>", codicefiscale.is_valid),
    Pattern("se_personnummer", "pii", r"(?:19|20)?\d{6}[-+]\d{4}\b", "<NATIONAL_ID>", personnummer.is_valid),
)

SECRETS = tuple(p for p in PATTERNS if p.category == "secret")
PII = tuple(p for p in PATTERNS if p.category == "pii")
BY_KIND = {p.kind: p for p in PATTERNS}


# A match starts at the start of the text, after a character that cannot be part of it, or after a JSON
# escape: in raw JSON, "Card:\n4111..." has the digits right after the letter n of the escape, where a
# plain word boundary would not see a start. Not after a dot: the digits after a decimal point are part
# of a number (`"retryInMs":1067.2587378957041` holds no card number). Group 1 is that lead, kept on
# redaction; group 2 the match.
LEAD = r'(^|[^A-Za-z0-9_.\\]|\\[nrtbf"/\\])'


def regex_for(p: Pattern) -> str:
    return f"{LEAD}({p.regex})"


def guard_for(p: Pattern) -> str:
    """What a text must hold to be searched for `p` in context: its guard, else its hint (a keyed pattern's
    key word, which every match holds too); '' when nothing cheaper than the search itself would do."""
    return p.guard or p.hint


def prefilter() -> str:
    """One RE2 expression that picks the texts worth a closer look, in a single pass: every pattern, each
    keyed one by its hint. A keyed pattern's open-ended key prefix in the same alternation makes RE2's
    DFA outgrow its memory and fall back to an engine a hundred times slower (2.9 s against 0.03 s for
    5 MB of records); the hint, a key word and what follows it, costs next to nothing. It stands outside
    LEAD: a key word often follows a letter (`dbPassword`, `OPENAI_API_KEY`)."""
    direct = "|".join(f"(?:{p.regex})" for p in PATTERNS if not p.hint)
    hints = "|".join(dict.fromkeys(f"(?:{p.hint})" for p in PATTERNS if p.hint))
    return f"(?:{LEAD}(?:{direct}))|{hints}"


def core(kind: str, hit: str) -> str:
    """The part of a match that is the secret itself: the value of a keyed match (the key and the quoting
    around it vary with where the text was written), else the whole match."""
    forms = {"sensitive_field": _FIELD_FORMS, "sensitive_assignment": _ASSIGN_FORMS}.get(kind, [])
    for form in forms:
        m = form.fullmatch(hit)
        if m:
            return _SCHEME.sub("", m["v"].strip()).strip()
    if kind == "password":
        return re.split(r"[:=]", hit, maxsplit=1)[-1].strip(" \"'")
    if kind == "url_password":
        m = re.search(r"//[^:/@]*:([^@]+)@", hit)
        return m[1] if m else hit
    if kind in ("authorization_header", "bearer_token", "aws_secret_key"):
        return re.split(r"[\s:=\"']+", hit.rstrip())[-1]
    return hit


def valid(kind: str, candidate: str) -> bool:
    """Whether a candidate the regex found is the real thing."""
    check = BY_KIND[kind].validate
    try:
        return check is None or bool(check(candidate))
    except Exception:  # a validator that chokes on odd input has found nothing
        return False
