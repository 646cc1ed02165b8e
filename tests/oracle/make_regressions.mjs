// Writes tests/oracle/regressions_{tokenizer,chat}.jsonl: hand-picked edge cases (and any case a
// random run ever found different), each with the npm oracle's answer. Run after adding a case:
//   node tests/oracle/make_regressions.mjs
// The answers were also checked against HF tokenizers 0.23.2 / transformers 5.17 (docs/reliability.md).
import fs from 'fs';
import path from 'path';
import { SOURCE_DIR, loadReferenceTokenizer, loadReferenceTemplate, byteChars } from './common.mjs';

const ref = loadReferenceTokenizer();
const render = loadReferenceTemplate();
const byteId = (b) => ref.vocab[byteChars()[b]];

const texts = [
  '', ' ', '   ', '\n', '\r\n\r\n  \n', '\t \t', 'a\u0301\u0302', '\u1100\u1161\u11a8', '\u212a', '<thin\u212a>',
  '<|im_start|><|im_start|>', '<|im_start|', '<|im_end|>\n', 'x<|endoftext|>y', ' <think>', '</think>\n\n',
  "I'M WE'VE they'd", "'s's's", '123456789012', '١٢٣٤', '\ufeffhello', '\ufffd\ufffd', 'a'.repeat(1000),
  '你好世界'.repeat(50), '👨‍👩‍👧‍👦', '🇫🇷🇯🇵', 'e\u0301\u0301\u0301', '\u0000\u0001', '  hello  world  ', 'hello\u00a0world',
  '\u3000\u3000x', '\u2028\u2029', '&&||!!', '....', '```python\nprint(1)\n```', 'http://a.b/c?d=e&f=g#h',
];
const idLists = [
  [byteId(0xe4)], [byteId(0xe4), byteId(0xbd)], [byteId(0xe4), byteId(0xbd), byteId(0xa0)], [byteId(0xf0), byteId(0x41)],
  [byteId(0xff)], [byteId(0xc0), byteId(0xaf)], [byteId(0xed), byteId(0xa0), byteId(0x80)],
  [151644, 9707, 151645], [151667, 151668], [151643], [byteId(0xe4), 151644, byteId(0xbd)], [999999, -1, 9707],
];
const enc = texts.map((text) => {
  const ids = ref.encode(text);
  return { text, ids, decoded: ref.decode(ids, false), decoded_skip: ref.decode(ids, true) };
});
const dec = idLists.map((ids) => ({ ids, decoded: ref.decode(ids.filter((i) => i >= 0), false), decoded_skip: ref.decode(ids.filter((i) => i >= 0), true) }));
fs.writeFileSync(path.join(SOURCE_DIR, 'tests/oracle/regressions_tokenizer.jsonl'), [...enc, ...dec].map((c) => JSON.stringify(c)).join('\n') + '\n');

const u = (content) => ({ role: 'user', content });
const a = (content, reasoning_content) => (reasoning_content === undefined ? { role: 'assistant', content } : { role: 'assistant', content, reasoning_content });
const convs = [
  // Python's strip('\n') keeps spaces and tabs (the npm jinja's own strip would drop them).
  [[u('q'), a('<think>\n  r  \n</think>\n\n  a ')], true, true],
  [[u('q'), a('<think>\n\tr\n</think>\t\n x'), u('again')], true, false],
  [[u('q'), a(' ok ', ' \n why \n ')], false, true],
  [[u('q'), a('x', '')], true, true],
  [[u('<tool_response>t</tool_response>'), a('<think>r</think>z')], true, true],
  [[{ role: 'system', content: 's' }, { role: 'system', content: 's2' }, u('q')], true, false],
  [[{ role: 'tool', content: 't1' }, { role: 'tool', content: 't2' }], false, true],
  [[u('q'), a('</think>only close')], true, true],
  [[u('q'), a('a</think>b</think>c')], true, true],
  [[{ role: 'developer', content: 'ignored' }, u('q')], true, true],
];
const chat = convs.map(([messages, agp, think]) => {
  const text = render(messages, agp, think);
  return { messages, add_generation_prompt: agp, enable_thinking: think, text, ids: ref.encode(text) };
});
fs.writeFileSync(path.join(SOURCE_DIR, 'tests/oracle/regressions_chat.jsonl'), chat.map((c) => JSON.stringify(c)).join('\n') + '\n');
console.log(`${enc.length + dec.length} tokenizer and ${chat.length} chat regression cases written`);
