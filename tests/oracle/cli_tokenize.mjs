// `verbatim tokenize` against @huggingface/tokenizers on the same tokenizer.json: random hostile
// strings, one JSON string per stdin line, must give the same id arrays line for line.
//   node tests/oracle/cli_tokenize.mjs --bin build/verbatim [--seed N] [--count N]
// Exit 0 when every line matches; prints each mismatch (input, expected, got) and exits 1 otherwise.
import { spawnSync } from 'child_process';
import { parseArgs, makeRng, loadReferenceTokenizer, randomText, tokenizerDir } from './common.mjs';

const args = parseArgs(process.argv.slice(2), { bin: '', seed: 20261201, count: 3000 });
if (!args.bin) throw new Error('--bin PATH_TO_VERBATIM is required');
const t0 = Date.now();
const rng = makeRng(args.seed);
const ref = loadReferenceTokenizer();
const texts = [];
for (let i = 0; i < args.count; i++) texts.push(randomText(rng));

const run = spawnSync(args.bin, ['tokenize', '--tokenizer', tokenizerDir()], {
  input: texts.map((t) => JSON.stringify(t)).join('\n') + '\n',
  maxBuffer: 1 << 30,
  encoding: 'utf8',
});
if (run.error) throw run.error;
const lines = run.stdout.split('\n');
if (lines.at(-1) === '') lines.pop();
let bad = 0;
if (run.status !== 0) {
  console.log(`verbatim tokenize exited ${run.status}: ${run.stderr.slice(0, 2000)}`);
  bad++;
}
if (lines.length !== texts.length) {
  console.log(`verbatim tokenize printed ${lines.length} lines for ${texts.length} inputs`);
  bad++;
}
let idsTotal = 0;
for (let i = 0; i < Math.min(lines.length, texts.length); i++) {
  const want = JSON.stringify(ref.encode(texts[i]));
  idsTotal += want.split(',').length;
  if (lines[i] !== want) {
    if (bad++ < 10) console.log(`line ${i + 1}: input ${JSON.stringify(texts[i])}\n  expected ${want}\n  got      ${lines[i]}`);
  }
}
const ms = Date.now() - t0;
console.log(`cli_tokenize seed ${args.seed}: ${texts.length} strings, ~${idsTotal} ids, ${bad} mismatches, ${ms} ms`);
process.exit(bad ? 1 : 0);
