// Prints reference cases as JSON lines, for tests/oracle_*_test.cpp to compare our C++ against.
//   node tests/oracle/cases.mjs --kind encode|decode|chat --seed N --count N
// encode: {"text", "ids", "decoded", "decoded_skip"}   (the text after HF's UTF-8 repair)
// decode: {"ids", "decoded", "decoded_skip"}            (random ids, lone bytes, specials)
// chat:   {"messages", "add_generation_prompt", "enable_thinking", "text", "ids"}
import {
  parseArgs, makeRng, loadReferenceTokenizer, loadReferenceTemplate, randomText, randomIds,
  randomConversation, byteChars,
} from './common.mjs';

const args = parseArgs(process.argv.slice(2), { kind: 'encode', seed: 1, count: 1000 });
const rng = makeRng(args.seed);
const ref = loadReferenceTokenizer();
const out = [];
const emit = (o) => {
  out.push(JSON.stringify(o));
  if (out.length >= 256) { process.stdout.write(out.join('\n') + '\n'); out.length = 0; }
};

if (args.kind === 'encode') {
  for (let i = 0; i < args.count; i++) {
    const text = randomText(rng);
    const ids = ref.encode(text);
    emit({ text, ids, decoded: ref.decode(ids, false), decoded_skip: ref.decode(ids, true) });
  }
} else if (args.kind === 'decode') {
  const chars = byteChars();
  const byteIds = chars.map((c) => ref.vocab[c]);
  const vocabSize = Object.keys(ref.vocab).length + ref.added.length;
  for (let i = 0; i < args.count; i++) {
    const ids = randomIds(rng, ref, byteIds, vocabSize);
    emit({ ids, decoded: ref.decode(ids, false), decoded_skip: ref.decode(ids, true) });
  }
} else if (args.kind === 'chat') {
  const render = loadReferenceTemplate();
  for (let i = 0; i < args.count; i++) {
    const c = randomConversation(rng);
    const text = render(c.messages, c.add_generation_prompt, c.enable_thinking);
    emit({ ...c, text, ids: ref.encode(text) });
  }
} else {
  throw new Error(`unknown --kind ${args.kind}`);
}
process.stdout.write(out.length ? out.join('\n') + '\n' : '');
