// Encodes a corpus with Hugging Face's JavaScript tokenizers and prints, as
// JSON, the time and token count per tokenizer; internal/bench/tokbench runs
// it on the same corpus as Hone's tokenizer.
//
// Usage: node testdata/tokenizers/js/bench.mjs [--repeat=N] CORPUS.json [qwen3|llama3|gemma3 ...]
// CORPUS.json is a JSON array of document strings; each is encoded on its own
// without the post-processor's special tokens. With --repeat=N each
// tokenizer makes N passes and the one of least CPU time is reported, as
// tokbench reports Hone's best of its passes (the later passes of both
// start with warm caches and, here, compiled code).
import { readFileSync } from "node:fs";
import { loadTokenizer, models } from "./golden.mjs";

let args = process.argv.slice(2);
let repeat = 1;
if (args.length && args[0].startsWith("--repeat=")) {
  repeat = Number(args[0].slice("--repeat=".length));
  args = args.slice(1);
}
const [file, ...names] = args;
if (!file || !(Number.isInteger(repeat) && repeat >= 1)) {
  console.error("usage: node bench.mjs [--repeat=N] CORPUS.json [qwen3|llama3|gemma3 ...]");
  process.exit(2);
}
const docs = JSON.parse(readFileSync(file, "utf8"));
const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);
const results = [];
for (const name of names.length ? names : Object.keys(models)) {
  const { tok } = loadTokenizer(name);
  let best;
  for (let pass = 0; pass < repeat; pass++) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    let tokens = 0;
    let hash = 0;
    for (const d of docs) {
      const ids = tok.encode(d, { add_special_tokens: false }).ids;
      tokens += ids.length;
      for (const id of ids) hash = (Math.imul(hash, 31) + id) >>> 0;
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    const cpu_seconds = (c.user + c.system) / 1e6; // the whole process, like tokbench
    if (!best || cpu_seconds < best.cpu_seconds) {
      best = { tokenizer: name, seconds, cpu_seconds, tokens, bytes, docs: docs.length, hash, passes: repeat };
    }
  }
  results.push(best);
}
console.log(JSON.stringify({ reference: "@huggingface/tokenizers", node: process.version, results }));
