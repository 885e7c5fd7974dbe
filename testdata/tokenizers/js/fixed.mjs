// Reads from stdin a JSON request
//   {"tokenizers": {NAME: {"dir": DIR, "long": BOOL}}, "texts": [BASE64], "long_texts": [BASE64]}
// and writes to stdout, as JSON, what Hugging Face's JavaScript tokenizers make
// of each text with the tokenizer.json and tokenizer_config.json in each DIR:
// the same fields differential.mjs writes, per tokenizer name, under "cases";
// where "long" is set, also "long_cases": the long texts' ids with the
// post-processor's tokens and their decode only (the reference takes about a
// second for 100k characters of one word). The texts come
// as the base64 of their bytes so that bytes that are not UTF-8 reach the
// reference as a WHATWG TextDecoder reads them (one U+FFFD per maximal
// invalid subpart; a leading U+FEFF is kept, not dropped as a BOM).
// format/tokenizer's TestDifferentialFixedJS writes the request (a fixed
// corpus, and tokenizer files with added-token flags the real files lack).
//
//   node fixed.mjs < request.json
import { readFileSync } from "node:fs";
import { loadTokenizerDir } from "./golden.mjs";

const req = JSON.parse(readFileSync(0, "utf8"));
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
const text64 = (b) => utf8.decode(Buffer.from(b, "base64"));
const texts = req.texts.map(text64);
const longTexts = req.long_texts.map(text64);
const opts = (skip) => ({ skip_special_tokens: skip, clean_up_tokenization_spaces: false });
const out = {};
for (const [name, { dir, long }] of Object.entries(req.tokenizers)) {
  const { tok, cont } = loadTokenizerDir(dir);
  const cases = texts.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: true }).ids;
    const c = {
      text,
      ids,
      ids_no_special: tok.encode(text, { add_special_tokens: false }).ids,
      decoded: ids.length === 0 ? "" : tok.decode(ids, opts(false)),
      decoded_skip_special: ids.length === 0 ? "" : tok.decode(ids, opts(true)),
    };
    if (cont !== tok) c.continued = ids.length === 0 ? "" : cont.decode(ids, opts(false));
    return c;
  });
  const longCases = !long ? [] : longTexts.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: true }).ids;
    const c = { ids, decoded: tok.decode(ids, opts(false)) };
    if (cont !== tok) c.continued = cont.decode(ids, opts(false));
    return c;
  });
  out[name] = { cases, long_cases: longCases };
}
process.stdout.write(JSON.stringify(out));
