"""What the privacy scan looks for: secret and PII patterns, and the validators behind them.

Every pattern is an RE2 regular expression that DuckDB runs over raw record text, set-at-a-time. The
text is JSON as written, so patterns never cross a `"` (a match stays inside one JSON string) and allow
JSON's escaped slash (`\\/`) where a URL may hold one. Patterns that over-match on their own (card
numbers, phone numbers, IBANs, ids with a checksum, IP addresses) have a validator: DuckDB hands the
distinct candidate strings, never whole records, to it in Python.
"""

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

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


_PLACEHOLDER_VALUE = re.compile(r"^([*xX•.\-_#]+|<[^>]*>|\$\{?[A-Za-z_]+\}?|%\(?[a-z_]+\)?s?|null|none|true|false|redacted|changeme\b.*)$", re.I)


def _password_value(s: str) -> bool:
    """The value of a password=/secret: pair: real-looking, not a placeholder or a variable."""
    value = re.split(r"[:=]", s, maxsplit=1)[-1].strip(" \"'")
    return len(value) >= 6 and not _PLACEHOLDER_VALUE.match(value) and _entropy(value) >= 2.5


_JSON_SLASH = r"\\?/"
_TOKEN = r"[A-Za-z0-9_\-.=~+/]"

PATTERNS: tuple[Pattern, ...] = (
    Pattern("private_key", "secret", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    Pattern("aws_access_key", "secret", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    Pattern("aws_secret_key", "secret", r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}"),
    Pattern("github_token", "secret", r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b"),
    Pattern("gitlab_token", "secret", r"glpat-[A-Za-z0-9_\-]{20,}"),
    Pattern("slack_token", "secret", r"xox[abposr]-[A-Za-z0-9\-]{10,}|hooks\.slack\.com" + _JSON_SLASH + r"services" + _JSON_SLASH + r"[A-Za-z0-9_]+"),
    Pattern("anthropic_key", "secret", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    Pattern("openai_key", "secret", r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}"),
    Pattern("stripe_key", "secret", r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    Pattern("google_api_key", "secret", r"AIza[0-9A-Za-z_\-]{35}"),
    Pattern("jwt", "secret", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    Pattern("authorization_header", "secret", r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token)\s+" + _TOKEN + r"{12,}"),
    Pattern("bearer_token", "secret", r"(?i)bearer\s+" + _TOKEN + r"{20,}"),
    Pattern("url_password", "secret", r"[a-zA-Z][a-zA-Z0-9+.\-]*:" + _JSON_SLASH + _JSON_SLASH + r"[^\s:/@\"\\]+:[^\s/@\"\\]+@[A-Za-z0-9.\-]+"),
    Pattern("password", "secret", r"(?i)(?:password|passwd|pwd|passphrase|client_?secret|api_?key|secret_?key)[\"']?\s*[:=]\s*[\"']?[^\s\"',;&]{6,}",
            validate=_password_value),
    Pattern("email", "pii", r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b", "<EMAIL>"),
    Pattern("card", "pii", r"\d(?:[ \-]?\d){12,18}\b", "<CARD>", _card),
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
# plain word boundary would not see a start. Group 1 is that lead, kept on redaction; group 2 the match.
LEAD = r'(^|[^A-Za-z0-9_\\]|\\[nrtbf"/\\])'


def regex_for(p: Pattern) -> str:
    return f"{LEAD}({p.regex})"


def any_pattern() -> str:
    """One RE2 alternation of every pattern: a single pass that says whether a text needs a closer look."""
    return LEAD + "(?:" + "|".join(f"(?:{p.regex})" for p in PATTERNS) + ")"


def valid(kind: str, candidate: str) -> bool:
    """Whether a candidate the regex found is the real thing."""
    check = BY_KIND[kind].validate
    try:
        return check is None or bool(check(candidate))
    except Exception:  # a validator that chokes on odd input has found nothing
        return False
