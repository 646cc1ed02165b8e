// Shared by the parity oracles: a seeded PRNG, the npm reference tokenizer and chat template, and
// generators of hostile text and conversations. Nothing here was written against our C++ code:
// the expected answers come from @huggingface/tokenizers and @huggingface/jinja alone.
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';

export const SOURCE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(path.join(SOURCE_DIR, '.deps', 'node', 'package.json'));

export function tokenizerDir() {
  return process.env.VERBATIM_TOKENIZER_DIR || path.join(SOURCE_DIR, '.deps', 'tokenizer-qwen3');
}

export function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    if (!(key in defaults)) throw new Error(`unknown option ${a}`);
    const v = argv[++i];
    out[key] = typeof defaults[key] === 'number' ? Number(v) : v;
  }
  return out;
}

// mulberry32: tiny, fast and fully determined by the seed, so a failing case is rerun by its seed.
export function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));  // inclusive
  const pick = (arr) => arr[Math.floor(next() * arr.length)];
  return { next, int, pick, chance: (p) => next() < p };
}

// ---- the references -------------------------------------------------------------------------

export function loadReferenceTokenizer() {
  const { Tokenizer } = require('@huggingface/tokenizers');
  const dir = tokenizerDir();
  const tj = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const tc = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  const tok = new Tokenizer(tj, tc);
  const encode = (text) => tok.encode(text, { add_special_tokens: false }).ids;
  // The npm decode throws on an empty list where HF returns "".
  const decode = (ids, skip) => (ids.length ? tok.decode(ids, { skip_special_tokens: skip }) : '');
  const vocab = tj.model.vocab;
  const added = tj.added_tokens.map((t) => ({ id: t.id, content: t.content, special: t.special }));
  return { tok, encode, decode, vocab, added, config: tc };
}

// Python's str.isspace() set: what strip()/lstrip()/rstrip() remove when given no argument.
const PY_WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
  0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f,
  0x205f, 0x3000,
]);
function pyStrip(s, chars, left, right) {
  const cps = Array.from(s);
  const set = chars === undefined || chars === null ? null : new Set(Array.from(chars));
  const strip = (c) => (set ? set.has(c) : PY_WHITESPACE.has(c.codePointAt(0)));
  let b = 0, e = cps.length;
  if (left) while (b < e && strip(cps[b])) b++;
  if (right) while (e > b && strip(cps[e - 1])) e--;
  return cps.slice(b, e).join('');
}

// @huggingface/jinja 0.5.11 implements str.strip/lstrip/rstrip as JS trim*() and ignores the
// `chars` argument; the Qwen3 template calls .strip('\n') / .lstrip('\n') / .rstrip('\n') on the
// reasoning text, where Python (what transformers runs) removes newlines only. We give the string
// type Python's methods, so the oracle is jinja2's semantics, not the npm package's bug.
let jinjaPatched = false;
function patchJinjaStrip(jinja) {
  if (jinjaPatched || process.env.ORACLE_NO_JINJA_PATCH) return;
  const env = new jinja.Environment();
  env.set('probe', 'x');
  const sv = env.lookupVariable('probe');
  const proto = Object.getPrototypeOf(sv);
  const desc = Object.getOwnPropertyDescriptor(proto, 'builtins');
  const FunctionValue = desc.get.call(sv).get('upper').constructor;
  const StringValue = sv.constructor;
  Object.defineProperty(proto, 'builtins', {
    configurable: true,
    get() {
      const map = desc.get.call(this);
      if (!map.__py_strip) {
        const self = this;
        const mk = (l, r) =>
          new FunctionValue((args) => {
            const chars = args.length && args[0].type === 'StringValue' ? args[0].value : undefined;
            return new StringValue(pyStrip(self.value, chars, l, r));
          });
        map.set('strip', mk(true, true));
        map.set('lstrip', mk(true, false));
        map.set('rstrip', mk(false, true));
        map.__py_strip = true;
      }
      return map;
    },
  });
  jinjaPatched = true;
}

export function loadReferenceTemplate() {
  const jinja = require('@huggingface/jinja');
  patchJinjaStrip(jinja);
  const tc = JSON.parse(fs.readFileSync(path.join(tokenizerDir(), 'tokenizer_config.json'), 'utf8'));
  const template = new jinja.Template(tc.chat_template);
  return (messages, addGenerationPrompt, enableThinking) =>
    template.render({
      messages,
      add_generation_prompt: addGenerationPrompt,
      enable_thinking: enableThinking,
      bos_token: '',
      eos_token: tc.eos_token,
    });
}

// ---- hostile text ---------------------------------------------------------------------------

const WORDS = ['hello', 'world', 'The', 'quick', 'brown', 'fox', 'jumps', 'HTTP', 'json', 'naïve',
  'café', 'Straße', 'token', 'ization', 'über', 'x', 'I', 'a', 'don', 'can', 'ABC', 'camelCase',
  'snake_case', 'kebab-case', 'e.g.', 'U.S.A.', 'https://example.com/a?b=c', 'foo@bar.org'];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'x", "'"];
const SPECIAL_TEXT = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>',
  '</tool_call>', '<tool_response>', '<|fim_prefix|>', '<|vision_pad|>', '<|im_start|', '<|im_end',
  '<|im_start|><|im_start|>', '<|endoftext|>x', ' <|im_end|> ', '<think', '</think >', '<|IM_START|>',
  '<||>', '<|', '|>'];
const WHITESPACE = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', ' \n', '\n ', '\u00a0', '\u3000',
  '\u2028', '\u2029', '\u200b', '\u0085', '\u000b', '\u000c', '\u1680', '\u2003', '\ufeff', '\t\t \n  '];
const PUNCT = ['.', ',', '!', '?', ';', ':', '...', '—', '–', '«', '»', '“', '”', '„', '(', ')', '[', ']',
  '{', '}', '<', '>', '/', '\\', '#', '$', '%', '^', '&', '*', '~', '`', '|', '@', '==', '!=', '->', '::',
  '```', '"', "'", '、', '。', '，', '！', '？', '؟', '¿', '¡'];
// Code point ranges of scripts, so words are made of real letters of each.
const SCRIPTS = {
  latin_ext: [[0x00c0, 0x024f]], greek: [[0x0391, 0x03c9]], cyrillic: [[0x0410, 0x044f]],
  armenian: [[0x0531, 0x0556]], hebrew: [[0x05d0, 0x05ea]], arabic: [[0x0621, 0x064a]],
  devanagari: [[0x0905, 0x0939], [0x093e, 0x094d]], bengali: [[0x0985, 0x09b9]], thai: [[0x0e01, 0x0e3a]],
  georgian: [[0x10d0, 0x10fa]], hangul: [[0xac00, 0xd7a3]], hiragana: [[0x3041, 0x3096]],
  katakana: [[0x30a1, 0x30fa]], cjk: [[0x4e00, 0x9fff]], cjk_ext_b: [[0x20000, 0x2a6df]],
  fullwidth: [[0xff21, 0xff3a], [0xff10, 0xff19]], math_alnum: [[0x1d400, 0x1d7ff]],
  ethiopic: [[0x1200, 0x1248]], tamil: [[0x0b85, 0x0bb9]],
};
const DIGITS = [[0x30, 0x39], [0x0660, 0x0669], [0x06f0, 0x06f9], [0x0966, 0x096f], [0xff10, 0xff19],
  [0x2460, 0x2473], [0x00b2, 0x00b3], [0x2150, 0x215f]];
const EMOJI = ['😀', '👍', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '❤️', '❤', '🇫🇷', '🇯🇵🇺🇸', '🧑🏿‍🚀', '✌︎', '1️⃣', '#️⃣',
  '🫠', '🤷‍♀️', '👩🏻‍❤️‍💋‍👨🏼', '🐈‍⬛', '🏴󠁧󠁢󠁳󠁣󠁴󠁿', '©', '™', '↔', '⌚'];
const COMBINING = [[0x0300, 0x036f], [0x1ab0, 0x1abe], [0x20d0, 0x20f0], [0xfe20, 0xfe2f], [0x0591, 0x05bd],
  [0x064b, 0x065f], [0x093c, 0x094d], [0x3099, 0x309a]];
// Sequences whose NFC form differs from the input (composition, reordering, singletons, jamo).
const NFC_CASES = ['e\u0301', 'A\u030a', 'a\u0323\u0302', 'a\u0302\u0323', '\u1100\u1161\u11a8', '\u212b',
  '\u2126', 'o\u0308\u0304', '\u0041\u0308\u0301', 'ﬁ', '①', 'Å', '\u0344', '\u0958', 'ｶﾞ', '\u00c5\u0323',
  's\u0323\u0307', '\u1e9b\u0323', '\u0cca', '\u0f73'];

function cp(rng, ranges) {
  const [lo, hi] = rng.pick(ranges);
  return String.fromCodePoint(rng.int(lo, hi));
}
function repeat(rng, f, lo, hi) {
  let s = '';
  for (let i = rng.int(lo, hi); i > 0; i--) s += f();
  return s;
}
function anyCodePoint(rng) {
  // Anything but surrogates (a UTF-8 string cannot hold them): controls, noncharacters, private use.
  for (;;) {
    const plane = rng.pick([0, 0, 0, 0, 1, 2, 14, 15, 16]);
    const c = plane * 0x10000 + rng.int(0, 0xffff);
    if (c >= 0xd800 && c <= 0xdfff) continue;
    return String.fromCodePoint(c);
  }
}
// Random bytes, read as UTF-8 the way HF reads bytes it is given (`errors="replace"`): every
// maximal invalid subpart becomes U+FFFD. Both tokenizers then see the same repaired string.
function repairedBytes(rng) {
  const n = rng.int(1, 24);
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    bytes[i] = rng.chance(0.5) ? rng.int(0x80, 0xff) : rng.chance(0.5) ? rng.int(0x20, 0x7e)
      : rng.pick([0xc0, 0xc1, 0xe0, 0xed, 0xf0, 0xf4, 0xf5, 0xff, 0x80, 0xbf]);
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
}
// A valid multi-byte character cut short, then repaired: "\uFFFD" where the cut bytes were.
function truncatedChar(rng) {
  const enc = new TextEncoder().encode(rng.pick(['你', '😀', 'é', '€', '𝔸', '한']));
  const cut = enc.slice(0, rng.int(1, enc.length - 1));
  return new TextDecoder('utf-8').decode(new Uint8Array([...cut, ...new TextEncoder().encode(rng.pick(['', 'a', ' ', '你']))]));
}

const PIECES = [
  [10, (r) => (r.chance(0.3) ? ' ' : '') + r.pick(WORDS)],
  [4, (r) => r.pick(WORDS) + r.pick(CONTRACTIONS)],
  [5, (r) => repeat(r, () => cp(r, DIGITS.slice(0, 1)), 1, 12)],
  [2, (r) => repeat(r, () => cp(r, DIGITS), 1, 6)],
  [6, (r) => r.pick(WHITESPACE)],
  [2, (r) => repeat(r, () => r.pick(WHITESPACE), 2, 8)],
  [5, (r) => r.pick(PUNCT)],
  [8, (r) => (r.chance(0.3) ? ' ' : '') + repeat(r, () => cp(r, SCRIPTS[r.pick(Object.keys(SCRIPTS))]), 1, 8)],
  [4, (r) => r.pick(EMOJI)],
  [4, (r) => cp(r, SCRIPTS.latin_ext.concat([[0x61, 0x7a]])) + repeat(r, () => cp(r, COMBINING), 1, 4)],
  [2, (r) => repeat(r, () => cp(r, COMBINING), 1, 3)],
  [3, (r) => r.pick(NFC_CASES)],
  [4, (r) => r.pick(SPECIAL_TEXT)],
  [3, (r) => repeatedRun(r)],
  [3, (r) => anyCodePoint(r)],
  [3, (r) => repairedBytes(r)],
  [2, (r) => truncatedChar(r)],
  [2, (r) => String.fromCharCode(r.int(0, 0x1f))],
  [1, (r) => '\u0000'],
];
const PIECE_TOTAL = PIECES.reduce((s, [w]) => s + w, 0);

function repeatedRun(r) {
  const unit = r.pick(['a', ' ', '\n', '=', '-', 'ab', '你', '😀', '0', '.', '\t', ' a']);
  return unit.repeat(r.int(2, r.chance(0.2) ? 300 : 20));
}

export function randomText(rng, maxPieces = 24) {
  let s = '';
  const n = rng.int(1, maxPieces);
  for (let i = 0; i < n; i++) {
    let x = rng.next() * PIECE_TOTAL;
    for (const [w, f] of PIECES) {
      if ((x -= w) < 0) { s += f(rng); break; }
    }
  }
  return s;
}

// ---- ids for decode -------------------------------------------------------------------------

// GPT-2's byte <-> printable-character table: the vocab spells byte b as BYTE_CHARS[b].
export function byteChars() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const out = new Array(256);
  bs.forEach((b, i) => { out[b] = String.fromCodePoint(cs[i]); });
  return out;
}

export function randomIds(rng, ref, byteIds, vocabSize) {
  const n = rng.int(1, 40);
  const ids = [];
  const specials = ref.added.map((t) => t.id);
  for (let i = 0; i < n; i++) {
    const k = rng.next();
    if (k < 0.45) ids.push(rng.int(0, vocabSize - 1));
    else if (k < 0.75) ids.push(byteIds[rng.int(0x80, 0xff)]);   // lone UTF-8 continuation / lead bytes
    else if (k < 0.85) ids.push(byteIds[rng.int(0, 0x7f)]);
    else if (k < 0.95) ids.push(rng.pick(specials));
    else ids.push(rng.int(0, 2000));
  }
  return ids;
}

// ---- conversations --------------------------------------------------------------------------

function randomContent(rng) {
  const k = rng.next();
  if (k < 0.08) return '';
  if (k < 0.15) return rng.pick(['\n', '\n\n', ' ', '  \n ', '\n\t']) + randomText(rng, 6) + rng.pick(['', '\n', '\n\n', ' ']);
  return randomText(rng, 10);
}
function thinkContent(rng) {
  // Assistant text with an inline <think> block: the template splits on </think> and strips '\n'.
  const pre = rng.pick(['', '\n', 'x', ' ']);
  const open = rng.pick(['<think>', '<think>\n', '<think>\n\n', '', '<think> ']);
  const reason = randomContent(rng);
  const close = rng.pick(['</think>', '\n</think>', '\n</think>\n\n', ' \n</think>\n ', '</think></think>']);
  return pre + open + reason + close + randomContent(rng);
}

export function randomConversation(rng) {
  const msgs = [];
  const n = rng.int(1, 7);
  if (rng.chance(0.4)) msgs.push({ role: 'system', content: randomContent(rng) });
  for (let i = 0; i < n; i++) {
    const k = rng.next();
    if (k < 0.4) {
      const c = rng.chance(0.1)
        ? '<tool_response>' + randomContent(rng) + '</tool_response>'  // counts as a tool turn for last_query_index
        : randomContent(rng);
      msgs.push({ role: 'user', content: c });
    } else if (k < 0.8) {
      const m = { role: 'assistant', content: rng.chance(0.35) ? thinkContent(rng) : randomContent(rng) };
      if (rng.chance(0.2)) m.reasoning_content = rng.chance(0.15) ? '' : randomContent(rng);
      msgs.push(m);
    } else if (k < 0.93) {
      msgs.push({ role: 'tool', content: randomContent(rng) });
    } else {
      msgs.push({ role: 'system', content: randomContent(rng) });
    }
  }
  return { messages: msgs, add_generation_prompt: rng.chance(0.75), enable_thinking: rng.chance(0.5) };
}
