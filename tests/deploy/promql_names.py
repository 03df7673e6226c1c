"""Which metric names (and label matchers) a PromQL expression reads.

A small scanner, not a full PromQL parser: it skips strings, range and
subquery brackets, Grafana variables, numbers and durations, function and
aggregation names (an identifier followed by `(`), the label lists of
by/without/on/ignoring/group_left/group_right, and the binary keywords. What is
left is metric names, each with the matchers of its `{...}`.
"""
import re

GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
# Aggregation operators may take their grouping first: `sum by (le) (...)`.
AGGREGATIONS = {"sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
                "count_values", "group", "limitk", "limit_ratio"}
TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$\w+|\[\[\w+\]\])
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?|0x[0-9a-fA-F]+)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<punct>[(){}\[\],@]|[=!]~|[=!<>]=|[-+*/%^<>=])
""", re.X)


def tokens(expr):
    pos = 0
    out = []
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise ValueError(f"cannot scan PromQL at {expr[pos:pos + 20]!r} in {expr!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "space":
            out.append((kind, m.group()))
    return out


def _skip_balanced(toks, i, open_, close):
    """toks[i] is `open_`; returns the index after its matching `close`."""
    depth = 0
    while i < len(toks):
        if toks[i] == ("punct", open_):
            depth += 1
        elif toks[i] == ("punct", close):
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_}{close}")


def selectors(expr):
    """[(metric_name, [(label, op, value), ...]), ...] in order of appearance."""
    toks = tokens(expr)
    out = []
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "punct" and text == "[":
            i = _skip_balanced(toks, i, "[", "]")
            continue
        if kind == "punct" and text == "{":
            raise ValueError(f"selector without a metric name in {expr!r}")
        if kind != "ident":
            i += 1
            continue
        if text in GROUPING and nxt == ("punct", "("):
            i = _skip_balanced(toks, i + 1, "(", ")")
            continue
        if nxt == ("punct", "(") or text.lower() in KEYWORDS or text in AGGREGATIONS:
            i += 1
            continue
        matchers = []
        i += 1
        if i < len(toks) and toks[i] == ("punct", "{"):
            end = _skip_balanced(toks, i, "{", "}")
            inner = [t for t in toks[i + 1:end - 1] if t != ("punct", ",")]
            for j in range(0, len(inner), 3):
                label, op, value = inner[j:j + 3]
                matchers.append((label[1], op[1], value[1][1:-1] if value[0] == "string" else value[1]))
            i = end
        out.append((text, matchers))
    return out


def grafana_query_selectors(query):
    """A templating query: label_values(selector, label) names a label too."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", query, re.S)
    if m:
        return selectors(m.group(1)), [m.group(2)]
    m = re.fullmatch(r"\s*(?:query_result|metrics)\((.*)\)\s*", query, re.S)
    if m:
        return selectors(m.group(1)), []
    return selectors(query), []


class Exposition:
    """A /metrics scrape: family types, and the label names/values per family."""

    SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}

    def __init__(self, text):
        self.types = {}
        self.labels = {}  # family -> {label: set(values)}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, typ = line.split()
                self.types[name] = typ
                self.labels.setdefault(name, {})
        sample = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+")
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = sample.match(line)
            if not m:
                continue
            family = self.family_of(m.group(1))
            if family is None:
                continue
            for label, value in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""):
                self.labels[family].setdefault(label, set()).add(value)

    def family_of(self, series_name):
        """The family a series name belongs to, honouring the family's type."""
        typ = self.types.get(series_name)
        if typ is not None and typ not in self.SUFFIXES:
            return series_name
        for family_type, suffixes in self.SUFFIXES.items():
            for suffix in suffixes:
                base = series_name[:-len(suffix)]
                if series_name.endswith(suffix) and self.types.get(base) == family_type:
                    return base
        return None


# Labels whose values the server pre-creates at start-up (the metrics contract),
# so an equality matcher on a value it lacks is a typo. Other labels (code,
# rpc of requests_total) only get values with traffic.
ENUMERATED_LABELS = {"kind", "reason", "phase", "model"}

# Labels Prometheus (or the Kubernetes service discovery) attaches at scrape time.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "container", "service", "endpoint"}


def problems(expr_selectors, exposition, allowed_names=()):
    """Messages for names/labels the expression reads that the scrape lacks."""
    out = []
    for name, matchers in expr_selectors:
        if name in allowed_names:
            continue
        family = exposition.family_of(name)
        if family is None:
            out.append(f"metric {name} is not exported")
            continue
        have = exposition.labels[family]
        for label, op, value in matchers:
            if label in TARGET_LABELS or (label == "le" and name.endswith("_bucket")):
                continue
            if label not in have:
                out.append(f"{name}: label {label} is not exported (has {sorted(have)})")
            elif label not in ENUMERATED_LABELS:
                continue
            elif op == "=" and value not in have[label]:
                out.append(f"{name}: no series with {label}=\"{value}\" (has {sorted(have[label])})")
            elif op == "=~":
                for alternative in value.split("|"):
                    if re.fullmatch(r"[\w]+", alternative) and alternative not in have[label]:
                        out.append(f"{name}: no series with {label}=\"{alternative}\" (has {sorted(have[label])})")
    return out
