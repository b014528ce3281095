// Drives a live `trex serve` with the official OpenAI client library and prints what it saw as
// one JSON object on stdout; tests/serve/openai_client_test.cc judges it. Nothing is judged here,
// so a failure names the observation that differs.
//
//   node check.mjs BASE_URL MODEL API_KEY
import OpenAI from 'openai';

const [baseURL, model, apiKey] = process.argv.slice(2);
// No retries: a retried request would hide the server's first answer. Timeouts are hang guards
// only (a slow, loaded machine must pass).
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 600_000 });
const out = {};

// An error as the library reports it: its class, HTTP status and OpenAI error fields.
async function caught(promise) {
  try {
    await promise;
    return { thrown: false };
  } catch (e) {
    return { thrown: true, class: e.constructor.name, status: e.status, code: e.code ?? null,
             type: e.type ?? null, param: e.param ?? null };
  }
}

const messages = [{ role: 'system', content: 'You model plants.' },
                  { role: 'user', content: 'minimize cost subject to capacity' }];

out.models = (await client.models.list()).data.map((m) => m.id);

// Plain chat, greedy.
const plain = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
out.plain = { object: plain.object, content: plain.choices[0].message.content,
              role: plain.choices[0].message.role, finish_reason: plain.choices[0].finish_reason,
              usage: plain.usage };

// The same request streamed, with the final usage chunk.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true } });
let text = '';
let finish = null;
let usage = null;
let chunks = 0;
let usageChunkHadChoices = null;
for await (const chunk of stream) {
  chunks += 1;
  if (chunk.usage) {
    usage = chunk.usage;
    usageChunkHadChoices = chunk.choices.length;
  }
  for (const c of chunk.choices) {
    if (c.delta?.content) text += c.delta.content;
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.stream = { content: text, finish_reason: finish, usage, chunks, usage_chunk_choices: usageChunkHadChoices };

// n choices with a seed, asked twice: the same texts both times.
const seeded = () => client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 1, n: 2, seed: 7 });
const s1 = await seeded();
const s2 = await seeded();
out.seeded = { first: s1.choices.map((c) => c.message.content), second: s2.choices.map((c) => c.message.content),
               indices: s1.choices.map((c) => c.index) };

// Eight requests at once (batched by the server), then the same eight one at a time.
const ask = (seed) => client.chat.completions.create({
  model, max_tokens: 10, temperature: 1, seed,
  messages: [{ role: 'user', content: `demand of the market ${seed}` }] });
const seeds = [1, 2, 3, 4, 5, 6, 7, 8];
const together = await Promise.all(seeds.map(ask));
const alone = [];
for (const s of seeds) alone.push(await ask(s));
out.concurrent = { together: together.map((r) => r.choices[0].message.content),
                   alone: alone.map((r) => r.choices[0].message.content),
                   ids: together.map((r) => r.id) };

// Loglikelihood through the legacy completions endpoint: echo + logprobs, no new tokens.
const scored = await client.completions.create({ model, prompt: 'minimize cost', echo: true, max_tokens: 0, logprobs: 2 });
const lp = scored.choices[0].logprobs;
out.loglikelihood = { text: scored.choices[0].text, tokens: lp.tokens.length,
                      first: lp.token_logprobs[0], rest_finite: lp.token_logprobs.slice(1).every(Number.isFinite),
                      top: lp.top_logprobs.slice(1).every((t) => Object.keys(t).length >= 1),
                      prompt_tokens: scored.usage.prompt_tokens, completion_tokens: scored.usage.completion_tokens };

// Errors, as the library classifies them.
out.errors = {
  unknown_model: await caught(client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 2 })),
  too_long: await caught(client.completions.create({ model, prompt: 'plant '.repeat(5000), max_tokens: 2 })),
  bad_temperature: await caught(client.chat.completions.create({ model, messages, temperature: 9, max_tokens: 2 })),
  wrong_key: await caught(new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 }).models.list()),
};

console.log(JSON.stringify(out));
