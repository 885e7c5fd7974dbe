// A user's agent written with the official openai Node client, for
// collect/proxy's recording test. Usage: node agent.mjs BASE_URL TRAJECTORY
// plain|stream. It plays a tool-using conversation (get_weather forced
// first, then an answer) and prints, as JSON, the conversation it kept and
// every response body it read, byte for byte (base64).
import OpenAI from "openai";

const [base, tid, mode] = process.argv.slice(2);
const pending = [];
const bodies = [];

// tee keeps a copy of each response body as the client reads it.
async function tee(url, init) {
  const resp = await fetch(url, init);
  if (!resp.body) return resp;
  const [mine, theirs] = resp.body.tee();
  const i = bodies.length;
  bodies.push(null);
  pending.push(new Response(mine).arrayBuffer().then((b) => { bodies[i] = Buffer.from(b).toString("base64"); }));
  return new Response(theirs, { status: resp.status, statusText: resp.statusText, headers: resp.headers });
}

const client = new OpenAI({
  baseURL: base, apiKey: "none", maxRetries: 0, fetch: tee,
  defaultHeaders: { "X-Hone-Trajectory": tid, "X-Hone-Group": tid },
});
const params = {
  model: "tiny", max_tokens: 120, seed: 11, temperature: 1,
  messages: [{ role: "system", content: "be brief" }, { role: "user", content: "weather in Oslo?" }],
  tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: {
    city: { type: "string", maxLength: 6 }, days: { enum: [1, 2, 3] } } } } }],
  tool_choice: { type: "function", function: { name: "get_weather" } },
};
for (let turn = 0; turn < 2; turn++) {
  let msg;
  if (mode === "stream") {
    const stream = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
    const done = await stream.finalChatCompletion();
    if (!done.usage) throw new Error("no usage chunk");
    msg = done.choices[0].message;
  } else {
    msg = (await client.chat.completions.create(params)).choices[0].message;
  }
  params.messages.push(msg);
  for (const c of msg.tool_calls ?? []) {
    params.messages.push({ role: "tool", tool_call_id: c.id, content: "rainy, 7°C" });
  }
  params.tool_choice = "none";
}
await Promise.all(pending);
process.stdout.write(JSON.stringify({ messages: params.messages, bodies }));
