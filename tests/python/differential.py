"""CPython's side of tests/python_differential.rs.

Reads batches from stdin: a line with the number of inputs n, then n JSON
lines, each a JSON string (the input text). Answers each batch with n JSON
lines, one per input: {"json": R, "literal": R} where R is what
`json.loads(text)` / `ast.literal_eval(text)` did:

- {"repr": repr(value), "hashes": [...]}, plus "canon" when the comparable
  form differs from the repr (see `canon`) and "why" naming the reasons;
  "hashes" holds, sorted, `hash()` of the value and of each value inside it
  whose hash does not depend on the process (see `stable_hashes`);
- {"repr_error": class} when the value was built but `repr` raised (an int of
  more than 4300 digits);
- {"error": class} with the exception's class name.

The whole batch is read before anything is written, so the test can write a
batch without reading concurrently.
"""
import ast
import json
import re
import sys
import warnings

assert sys.version_info[:2] == (3, 12), f"the reference is CPython 3.12, this is {sys.version}"

# Invalid escapes in literals warn (SyntaxWarning); the value is what counts.
warnings.simplefilter("ignore")

# A `\udXXX` surrogate escape in a repr (preceded by an even number of backslashes).
SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}")


def hash_randomised(v):
    """Whether `hash(v)` depends on PYTHONHASHSEED (str or bytes anywhere in it)."""
    if isinstance(v, (str, bytes)):
        return True
    if isinstance(v, tuple):
        return any(hash_randomised(e) for e in v)
    return False


def canon(v, why):
    """`repr(v)` but with each lone surrogate as U+FFFD and the elements of a
    set holding str/bytes sorted: the two documented deviations of the port
    (a Rust string cannot hold a surrogate; CPython's str hashes are seeded
    per process, so the port keeps such sets in insertion order)."""
    t = type(v)
    if t is list:
        return "[" + ", ".join(canon(e, why) for e in v) + "]"
    if t is tuple:
        if len(v) == 1:
            return "(" + canon(v[0], why) + ",)"
        return "(" + ", ".join(canon(e, why) for e in v) + ")"
    if t is dict:
        # Keys equal once their surrogates are U+FFFD are one key in the
        # port: the first one's place, the last one's value.
        items = {}
        for k, x in v.items():
            items[canon(k, why)] = canon(x, why)
        return "{" + ", ".join(k + ": " + x for k, x in items.items()) + "}"
    if t is set:
        if not v:
            return "set()"
        # Elements equal once their surrogates are U+FFFD are one element.
        items = list(dict.fromkeys(canon(e, why) for e in v))
        if any(hash_randomised(e) for e in v):
            items.sort()
            why.add("str set order")
        return "{" + ", ".join(items) + "}"
    r = repr(v)
    fixed = SURROGATE.sub(lambda m: m.group(1) + "\ufffd", r)
    if fixed != r:
        why.add("lone surrogate")
    return fixed


def stable_hashes(v, out):
    """Appends `hash(x)` for `v` and every value inside it whose hash is the
    same in every process (no str or bytes, no NaN, which hashes by identity),
    for the port's `Value::py_hash`; lists, sets and dicts have none."""
    t = type(v)
    if t in (list, tuple, set):
        for e in v:
            stable_hashes(e, out)
    elif t is dict:
        for k, x in v.items():
            stable_hashes(k, out)
            stable_hashes(x, out)
    if t in (list, set, dict) or hash_randomised(v) or has_nan(v):
        return
    try:
        out.append(hash(v))
    except TypeError:  # a tuple holding a list, say
        pass


def has_nan(v):
    if isinstance(v, float):
        return v != v
    if isinstance(v, complex):
        return v.real != v.real or v.imag != v.imag
    if isinstance(v, tuple):
        return any(has_nan(e) for e in v)
    return False


def evaluate(fn, text):
    try:
        value = fn(text)
    except json.JSONDecodeError:
        return {"error": "JSONDecodeError"}
    except Exception as e:  # SyntaxError, ValueError, TypeError, RecursionError, MemoryError, ...
        return {"error": type(e).__name__}
    try:
        r = repr(value)
    except Exception as e:  # ValueError: an int past the 4300-digit limit
        return {"repr_error": type(e).__name__}
    out = {"repr": r}
    try:
        hashes = []
        stable_hashes(value, hashes)
        out["hashes"] = sorted(hashes)
    except RecursionError:
        pass
    why = set()
    try:
        c = canon(value, why)
    except RecursionError:
        return out
    if c != r:
        out["canon"] = c
        out["why"] = sorted(why)
    return out


def main():
    stdin = sys.stdin
    stdout = sys.stdout
    while True:
        header = stdin.readline()
        if not header:
            return
        texts = [json.loads(stdin.readline()) for _ in range(int(header))]
        lines = []
        for text in texts:
            res = {"json": evaluate(json.loads, text), "literal": evaluate(ast.literal_eval, text)}
            lines.append(json.dumps(res))
        stdout.write("\n".join(lines) + "\n")
        stdout.flush()


main()
