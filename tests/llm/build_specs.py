"""Builds the input specs for the new rec48 cases from existing shared cases (no expected)."""
import copy, json
import os
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "conformance", "llm", "cases.jsonl")
base = {json.loads(l)["id"]: json.loads(l) for l in open(SRC, encoding="utf-8")}

def spec(src_id, new_id, tags_drop=(), tags_add=(), cfg_fn=None, content=None, llm_fn=None):
    c = copy.deepcopy(base[src_id])
    c.pop("expected")
    c["id"] = new_id
    if cfg_fn: cfg_fn(c["evaluator"]["config"])
    if content is not None:
        c["llm"]["responses"][0]["body"]["choices"][0]["message"]["content"] = content
    if llm_fn: llm_fn(c)
    tags = [t for t in c["tags"] if t not in tags_drop and not any(t.startswith(p) for p in tags_drop if p.endswith(":"))]
    c["tags"] = sorted(set(tags) | set(tags_add))
    return c

def drop_available(cfg):
    del cfg["available_tools"]

out = []
# Case A: available_tools key absent (metric gets available_tools=None)
for i, src in enumerate(["l1-00005-tool-correctness-llm", "l1-00009-tool-correctness-llm", "l1-00035-tool-correctness-llm"]):
    out.append(spec(src, f"rec48-a{i+1}-tool-correctness-llm-available-none", tags_drop=("available:empty",),
                    tags_add=("available:none",), cfg_fn=drop_available))
# Case B: structured-outputs model, reply content is JSON but not an object
B = [("l1-00030-tool-correctness-llm", "[0.5]", "list"),
     ("l1-00030-tool-correctness-llm", '"x"', "string"),
     ("l1-00059-tool-correctness-llm", "5", "number"),
     ("l1-00059-tool-correctness-llm", "null", "null")]
for i, (src, content, kind) in enumerate(B):
    out.append(spec(src, f"rec48-b{i+1}-tool-correctness-llm-nonobject-{kind}", tags_drop=("llm:",),
                    tags_add=(f"llm:json-nonobject-{kind}",), content=content))
with open("specs.jsonl", "w", encoding="utf-8") as f:
    for c in out: f.write(json.dumps(c, ensure_ascii=False) + "\n")

# Extras (not requested): the same non-object replies on the json_object and plain paths,
# and an object wrapped in an array.
X = [("l1-00010-tool-correctness-llm", "[0.5]", "nonobject-list"),       # gpt-3.5-turbo: json_object path
     ("l1-00010-tool-correctness-llm", "null", "nonobject-null"),        # gpt-3.5-turbo: json_object path
     ("l1-00038-tool-correctness-llm", "[0.5]", "nonobject-list"),       # gpt-5-chat-latest: plain path
     ("l1-00038-tool-correctness-llm", "5", "nonobject-number"),         # gpt-5-chat-latest: plain path
     ("l1-00010-tool-correctness-llm", '[{"score": 0.5, "reason": "r"}]', "array-wrapped-object"),  # json_object
     ("l1-00030-tool-correctness-llm", '[{"score": 0.5, "reason": "r"}]', "array-wrapped-object")]  # structured
with open("specs_extra.jsonl", "w", encoding="utf-8") as f:
    for i, (src, content, what) in enumerate(X):
        c = spec(src, f"rec48-x{i+1}-tool-correctness-llm-{what}", tags_drop=("llm:",), tags_add=(f"llm:json-{what}",), content=content)
        f.write(json.dumps(c, ensure_ascii=False) + "\n")
print(len(out), "specs +", len(X), "extras")
