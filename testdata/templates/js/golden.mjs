// golden.mjs renders every conversation in ../cases with every model template
// in ../<model>/ using @huggingface/jinja (the renderer transformers.js uses)
// and writes the expected strings to ../golden/<model>/<case>.txt.
// A template that raises for a case (Llama 3.1 refuses parallel tool calls)
// gets <case>.error holding the message instead.
//
// Run from this folder after `npm ci`:
//   node golden.mjs
// It rewrites ../golden/ and ../golden/PROVENANCE.json (versions, sha256 of
// every input and output). format/chattemplate's tests compare against these.
import { Template } from "@huggingface/jinja";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const models = ["qwen3", "qwen2.5", "llama3.1", "chatml", "gemma3"];
const specialKeys = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"];

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
const rel = (p) => path.relative(root, p).split(path.sep).join("/");

// loadModel mirrors transformers: chat_template.jinja beside tokenizer_config.json
// wins over the config's chat_template; a list of {name, template} is a set of
// named templates. Special tokens are the set ones (null is left out), given
// as strings (an AddedToken object contributes its content).
function loadModel(dir, inputs) {
  const cfgPath = path.join(dir, "tokenizer_config.json");
  const cfgText = fs.readFileSync(cfgPath);
  inputs[rel(cfgPath)] = sha256(cfgText);
  const cfg = JSON.parse(cfgText);
  let templates = {};
  const jinjaPath = path.join(dir, "chat_template.jinja");
  if (fs.existsSync(jinjaPath)) {
    const t = fs.readFileSync(jinjaPath);
    inputs[rel(jinjaPath)] = sha256(t);
    templates.default = t.toString("utf8");
  } else if (typeof cfg.chat_template === "string") {
    templates.default = cfg.chat_template;
  } else if (Array.isArray(cfg.chat_template)) {
    for (const { name, template } of cfg.chat_template) templates[name] = template;
  } else {
    throw new Error(`${dir}: no chat template`);
  }
  const special = {};
  for (const k of specialKeys) {
    const v = cfg[k];
    if (v === null || v === undefined) continue;
    special[k] = typeof v === "string" ? v : v.content;
  }
  if (Array.isArray(cfg.additional_special_tokens) && cfg.additional_special_tokens.length > 0) {
    special.additional_special_tokens = cfg.additional_special_tokens.map((v) => (typeof v === "string" ? v : v.content));
  }
  return { templates, special };
}

function pickTemplate(templates, tools) {
  if (tools && tools.length > 0 && templates.tool_use !== undefined) return templates.tool_use;
  if (templates.default === undefined) throw new Error("no default template");
  return templates.default;
}

const inputs = {};
const outputs = {};
const caseDir = path.join(root, "cases");
const caseFiles = fs.readdirSync(caseDir).filter((f) => f.endsWith(".json")).sort();
const goldenDir = path.join(root, "golden");
fs.rmSync(goldenDir, { recursive: true, force: true });
for (const f of caseFiles) inputs[rel(path.join(caseDir, f))] = sha256(fs.readFileSync(path.join(caseDir, f)));

for (const model of models) {
  const { templates, special } = loadModel(path.join(root, model), inputs);
  fs.mkdirSync(path.join(goldenDir, model), { recursive: true });
  for (const f of caseFiles) {
    const c = JSON.parse(fs.readFileSync(path.join(caseDir, f), "utf8"));
    const tools = c.tools ?? null;
    // The same variables transformers passes to render(): messages, tools,
    // documents, add_generation_prompt, then special tokens, then kwargs.
    const ctx = {
      messages: c.messages,
      tools,
      documents: null,
      add_generation_prompt: c.add_generation_prompt,
      ...special,
      ...(c.kwargs ?? {}),
    };
    const name = f.replace(/\.json$/, "");
    let out, text;
    try {
      text = new Template(pickTemplate(templates, tools)).render(ctx);
      out = path.join(goldenDir, model, name + ".txt");
    } catch (e) {
      text = String(e.message ?? e) + "\n";
      out = path.join(goldenDir, model, name + ".error");
    }
    fs.writeFileSync(out, text);
    outputs[rel(out)] = sha256(Buffer.from(text, "utf8"));
  }
}

const pkgVersion = (name) => JSON.parse(fs.readFileSync(path.join(here, "node_modules", name, "package.json"), "utf8")).version;
const provenance = {
  script: "testdata/templates/js/golden.mjs",
  command: "cd testdata/templates/js && npm ci && node golden.mjs",
  node: process.version,
  packages: { "@huggingface/jinja": pkgVersion("@huggingface/jinja") },
  inputs,
  outputs,
};
fs.writeFileSync(path.join(goldenDir, "PROVENANCE.json"), JSON.stringify(provenance, null, 2) + "\n");
console.log(`wrote ${Object.keys(outputs).length} golden files for ${models.length} templates × ${caseFiles.length} cases`);
