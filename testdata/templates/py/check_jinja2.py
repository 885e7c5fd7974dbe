"""Cross-check the golden files against Python's jinja2, set up the way
Hugging Face transformers sets it up for chat templates (sandboxed
environment, trim_blocks and lstrip_blocks, loopcontrols, its tojson,
raise_exception and strftime_now). transformers itself is not needed.

    python3 testdata/templates/py/check_jinja2.py

Prints one line per case x template and exits 1 on any difference from
testdata/templates/golden (written by js/golden.mjs with @huggingface/jinja).
"""
import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["qwen3", "qwen2.5", "llama3.1", "chatml"]
SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def load(model_dir):
    cfg = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    jinja_file = model_dir / "chat_template.jinja"
    if jinja_file.exists():
        templates = {"default": jinja_file.read_text(encoding="utf-8")}
    elif isinstance(cfg.get("chat_template"), str):
        templates = {"default": cfg["chat_template"]}
    else:
        templates = {t["name"]: t["template"] for t in cfg["chat_template"]}
    special = {}
    for k in SPECIAL:
        v = cfg.get(k)
        if v is not None:
            special[k] = v if isinstance(v, str) else v["content"]
    if cfg.get("additional_special_tokens"):
        special["additional_special_tokens"] = [v if isinstance(v, str) else v["content"] for v in cfg["additional_special_tokens"]]
    return templates, special


def main():
    env = environment()
    bad = 0
    for model in MODELS:
        templates, special = load(ROOT / model)
        for case_file in sorted((ROOT / "cases").glob("*.json")):
            case = json.loads(case_file.read_text(encoding="utf-8"))
            tools = case.get("tools")
            name = "tool_use" if tools and "tool_use" in templates else "default"
            kwargs = {**special, **case.get("kwargs", {})}
            golden = ROOT / "golden" / model / (case_file.stem + ".txt")
            golden_err = ROOT / "golden" / model / (case_file.stem + ".error")
            try:
                out = env.from_string(templates[name]).render(
                    messages=case["messages"], tools=tools, documents=None,
                    add_generation_prompt=case["add_generation_prompt"], **kwargs)
                ok = golden.exists() and golden.read_text(encoding="utf-8") == out
            except jinja2.exceptions.TemplateError as e:
                out = "raised: " + str(e)
                ok = golden_err.exists() and golden_err.read_text(encoding="utf-8").strip() == str(e)
            print(("same" if ok else "DIFFERENT"), model, case_file.stem)
            if not ok:
                bad += 1
                print("  python:", repr(out)[:2000])
    print(f"jinja2 {jinja2.__version__}: {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
