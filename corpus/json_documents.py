#!/usr/bin/env python3
"""JSON benchmark inputs for the JSON-library corpora (cjson, yyjson): the same bytes on
every machine.  Usage: python3 corpus/json_documents.py OUTPUT-DIRECTORY RECORDS

Writes records.json, records-modified.json and numbers.json; see the make_suite.sh of
each corpus for what they hold and why.
"""
import sys

class LCG:
    """64-bit linear congruential generator (Knuth's MMIX constants): the same numbers everywhere."""
    def __init__(self, seed):
        self.state = seed
    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
        return self.state >> 33          # 31 good bits
    def below(self, n):
        return self.next() % n
    def pick(self, seq):
        return seq[self.below(len(seq))]

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu compress parse print value object "
         "array string number true false null buffer pointer memory latency branch cache vector").split()
UNICODE = ("caf\u00e9", "Stra\u00dfe", "na\u00efve", "\u65e5\u672c\u8a9e", "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439",
           "\u03b1\u03b2\u03b3", "\U0001F600", "\u00bd\u2009cup", "\u20ac42")

def encode_string(text, ascii_only):
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"': out.append('\\"')
        elif ch == '\\': out.append('\\\\')
        elif ch == '\n': out.append('\\n')
        elif ch == '\t': out.append('\\t')
        elif code < 0x20: out.append('\\u%04x' % code)
        elif code < 0x80 or not ascii_only: out.append(ch)
        elif code < 0x10000: out.append('\\u%04x' % code)
        else:
            code -= 0x10000
            out.append('\\u%04x\\u%04x' % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
    out.append('"')
    return ''.join(out)

class Raw(str):
    """A number already written as JSON text."""

def encode(value, indent, level=0):
    pad = '\n' + ' ' * (indent * (level + 1)) if indent else ''
    end = '\n' + ' ' * (indent * level) if indent else ''
    colon = ': ' if indent else ':'
    if value is None: return 'null'
    if value is True: return 'true'
    if value is False: return 'false'
    if isinstance(value, Raw): return str(value)
    if isinstance(value, int): return str(value)
    if isinstance(value, tuple): return encode_string(value[0], ascii_only=True)   # ("text",): \u-escaped
    if isinstance(value, str): return encode_string(value, ascii_only=False)
    if isinstance(value, list):
        if not value: return '[]'
        return '[' + ','.join(pad + encode(v, indent, level + 1) for v in value) + end + ']'
    if isinstance(value, dict):
        if not value: return '{}'
        return '{' + ','.join(pad + encode_string(k, False) + colon + encode(v, indent, level + 1)
                              for k, v in value.items()) + end + '}'
    raise TypeError(value)

def decimal(r, digits, scale):
    """A decimal number with `digits` significant digits, written exactly (no float rounding)."""
    mantissa = r.below(10 ** digits)
    sign = '-' if r.below(4) == 0 else ''
    text = str(mantissa).rjust(scale + 1, '0')
    return Raw(f"{sign}{text[:-scale]}.{text[-scale:]}" if scale else sign + text)

def sentence(r, words):
    parts = []
    for _ in range(words):
        k = r.below(20)
        if k == 0: parts.append(r.pick(UNICODE))
        elif k == 1: parts.append('"' + r.pick(WORDS) + '"')
        elif k == 2: parts.append(r.pick(WORDS) + '\\' + r.pick(WORDS))
        else: parts.append(r.pick(WORDS))
    return ' '.join(parts) + ('.\n' if r.below(3) == 0 else '.')

def record(r, i):
    return {
        "id": i,
        "guid": ''.join('%08x' % r.next() for _ in range(4)),
        "name": r.pick(WORDS).capitalize() + ' ' + r.pick(WORDS).capitalize(),
        "active": r.below(2) == 0,
        "balance": decimal(r, 7, 2),
        "score": Raw(repr(r.next() / 2**31 * 1000)),
        "ratio": Raw('%de-%d' % (r.below(10**6), 3 + r.below(20))),
        "age": 18 + r.below(60),
        "tags": [r.pick(WORDS) for _ in range(1 + r.below(5))],
        "location": {"lat": decimal(r, 8, 6), "lon": decimal(r, 9, 6)},
        "about": sentence(r, 8 + r.below(20)),
        "about_escaped": (sentence(r, 4 + r.below(8)),),
        "friends": [{"id": r.below(100000), "name": r.pick(WORDS)} for _ in range(r.below(4))],
        "parent": None,
    }

def records(count, seed):
    r = LCG(seed)
    return {"meta": {"generator": "corpus make_suite.sh", "seed": seed, "count": count},
            "records": [record(r, i) for i in range(count)]}

def modified(doc, seed):
    """The same document with every 16th record changed: what a JSON Patch has to describe."""
    r = LCG(seed)
    out = {"meta": dict(doc["meta"]), "records": []}
    for i, rec in enumerate(doc["records"]):
        rec = dict(rec)
        if i % 16 == 3:
            rec["score"] = Raw(repr(r.next() / 2**31))
            rec["tags"] = rec["tags"][:-1] + [r.pick(WORDS)]
            rec["note"] = sentence(r, 5)
            del rec["parent"]
        out["records"].append(rec)
    return out

def numbers(seed):
    r = LCG(seed)
    return {
        "integers": [r.next() - 2**30 for _ in range(2000)],
        "large": [Raw(str(r.next() * 2**31 + r.next())) for _ in range(500)],
        "decimals": [decimal(r, 1 + r.below(9), r.below(7)) for _ in range(3000)],
        "doubles": [Raw(repr(r.next() / (1 + r.next()))) for _ in range(2000)],
        "exponents": [Raw('%d.%de%s%d' % (1 + r.below(9), r.below(10**6), r.pick('+-'), r.below(300))) for _ in range(1000)],
        "matrix": [[decimal(r, 5, 4) for _ in range(16)] for _ in range(100)],
    }

if __name__ == '__main__':
    out = sys.argv[1]
    base = records(int(sys.argv[2]), 2024)
    with open(f'{out}/records.json', 'w', encoding='utf-8', newline='\n') as f:
        f.write(encode(base, 2) + '\n')
    with open(f'{out}/records-modified.json', 'w', encoding='utf-8', newline='\n') as f:
        f.write(encode(modified(base, 7), 2) + '\n')
    with open(f'{out}/numbers.json', 'w', encoding='utf-8', newline='\n') as f:
        f.write(encode(numbers(42), 0) + '\n')
