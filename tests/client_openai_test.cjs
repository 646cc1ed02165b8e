// Drives `verbatim serve` with the official `openai` npm package, as a user's app would:
//   node client_openai_test.cjs BASE_URL MODEL API_KEY
// Exits 0 and prints "openai-client: all checks passed" when every check holds; else prints the
// failed check and exits 1. Run by tests/client_openai_test.cpp (NODE_PATH finds the package).
'use strict';
const openaiModule = require('openai');
const OpenAI = openaiModule.OpenAI || openaiModule.default || openaiModule;

const [baseURL, model, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const messages = [
  { role: 'system', content: 'You answer in one short sentence.' },
  { role: 'user', content: 'What is the tallest mountain on Earth?' },
];

async function chatNonStreaming() {
  const params = { model, messages, max_tokens: 12, temperature: 0.8, seed: 42, logprobs: true, top_logprobs: 3 };
  const a = await client.chat.completions.create(params);
  const b = await client.chat.completions.create(params);
  check(a.object === 'chat.completion', 'object is chat.completion');
  check(a.model === model, 'model echoes the served name');
  check(typeof a.system_fingerprint === 'string' && a.system_fingerprint.startsWith('fp_'), 'system_fingerprint');
  const c = a.choices[0];
  check(c.message.role === 'assistant' && typeof c.message.content === 'string', 'assistant message');
  check(c.finish_reason === 'length' || c.finish_reason === 'stop', 'finish_reason');
  check(c.logprobs && c.logprobs.content.length === a.usage.completion_tokens, 'one logprob entry per token');
  for (const e of c.logprobs.content) {
    check(typeof e.logprob === 'number' && e.logprob <= 0, 'logprob is a number <= 0');
    check(e.top_logprobs.length === 3, 'top_logprobs has 3 entries');
    check(Array.isArray(e.bytes), 'bytes');
  }
  check(b.choices[0].message.content === c.message.content, 'same seed, same text');
  check(JSON.stringify(b.choices[0].logprobs) === JSON.stringify(c.logprobs), 'same seed, same logprobs');
  const other = await client.chat.completions.create({ ...params, seed: 43 });
  check(other.choices[0].message.content !== c.message.content, 'another seed, other text');
  return a;
}

async function chatStreaming(reference) {
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 12, temperature: 0.8, seed: 42, logprobs: true, top_logprobs: 3,
    stream: true, stream_options: { include_usage: true },
  });
  let content = '';
  let role = null;
  let finish = null;
  let usage = null;
  let chunks = 0;
  const lps = [];
  for await (const chunk of stream) {
    chunks++;
    check(chunk.object === 'chat.completion.chunk', 'chunk object');
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      if (ch.delta.content) content += ch.delta.content;
      if (ch.logprobs && ch.logprobs.content) lps.push(...ch.logprobs.content);
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check(chunks > 2, 'several chunks');
  check(role === 'assistant', 'first delta carries the role');
  check(content === reference.choices[0].message.content, 'streamed text equals the non-streamed text');
  check(JSON.stringify(lps) === JSON.stringify(reference.choices[0].logprobs.content), 'streamed logprobs equal');
  check(finish === reference.choices[0].finish_reason, 'finish_reason');
  check(usage && usage.completion_tokens === reference.usage.completion_tokens, 'usage on the last chunk');
}

async function completions() {
  const params = { model, prompt: 'Once upon a time', max_tokens: 8, temperature: 1.0, seed: 7, logprobs: 2 };
  const a = await client.completions.create(params);
  const b = await client.completions.create(params);
  check(a.object === 'text_completion', 'text_completion');
  check(a.choices[0].text === b.choices[0].text, 'seeded completion repeats');
  check(a.choices[0].logprobs.tokens.length === 8, 'logprobs.tokens');
  check(JSON.stringify(a.choices[0].logprobs) === JSON.stringify(b.choices[0].logprobs), 'logprobs repeat');
  let streamed = '';
  for await (const chunk of await client.completions.create({ ...params, stream: true })) {
    for (const ch of chunk.choices) streamed += ch.text;
  }
  check(streamed === a.choices[0].text, 'streamed completion equals the non-streamed one');
  // A loglikelihood eval's call (lm-evaluation-harness): the prompt's own logprobs, batched prompts.
  const ll = { model, prompt: ['The sky is blue', 'The sky is green'], max_tokens: 0, echo: true, logprobs: 1, temperature: 0 };
  const e1 = await client.completions.create(ll);
  const e2 = await client.completions.create(ll);
  check(e1.choices.length === 2 && e1.choices[0].text === 'The sky is blue', 'echo with max_tokens 0: the prompt alone');
  check(e1.usage.completion_tokens === 0 && e1.choices[1].finish_reason === 'length', 'no completion tokens');
  const lp = e1.choices.map((c) => c.logprobs.token_logprobs);
  check(lp[0][0] === null && lp[0].slice(1).every((x) => typeof x === 'number' && x <= 0), 'prompt logprobs, null first');
  check(JSON.stringify(e1.choices) === JSON.stringify(e2.choices), 'loglikelihoods repeat bit for bit');
  check(lp[0][lp[0].length - 1] !== lp[1][lp[1].length - 1], 'another last word, another logprob');
}

async function errors() {
  const expectStatus = async (status, cls, fn) => {
    try {
      await fn();
    } catch (e) {
      check(e.status === status, `status ${status}, got ${e.status}`);
      check(e instanceof cls, `error class ${cls.name}`);
      check(typeof e.message === 'string' && e.message.length > 0, 'error message');
      return;
    }
    throw new Error(`check failed: expected HTTP ${status}`);
  };
  await expectStatus(400, OpenAI.BadRequestError, () =>
    client.chat.completions.create({ model, messages, max_tokens: -1 }));
  await expectStatus(404, OpenAI.NotFoundError, () =>
    client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 2 }));
  const wrongKey = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await expectStatus(401, OpenAI.AuthenticationError, () => wrongKey.models.list());
}

async function models() {
  const list = await client.models.list();
  const ids = [];
  for await (const m of list) ids.push(m.id);
  check(ids.includes(model), 'models.list has the served model');
}

(async () => {
  const reference = await chatNonStreaming();
  await chatStreaming(reference);
  await completions();
  await errors();
  await models();
  console.log('openai-client: all checks passed');
})().catch((e) => {
  console.error('openai-client: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
