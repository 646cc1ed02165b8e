#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (run once; the files are committed).
Small, valid or nearly valid inputs that reach deep into each parser; libFuzzer mutates them."""
import json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, '..', 'tests', 'fixtures')


def out(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode('utf-8')
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def st(tensors, meta=None, pad=True, header_len=None, extra=b''):
    """tensors: list of (name, dtype, shape, data_offsets, bytes)."""
    h = {}
    if meta is not None:
        h['__metadata__'] = meta
    blob = b''
    for name, dt, shape, offs, data in tensors:
        h[name] = {'dtype': dt, 'shape': shape, 'data_offsets': offs}
        blob += data
    hj = json.dumps(h, separators=(',', ':')).encode()
    if pad:
        hj += b' ' * (-len(hj) % 8)
    n = len(hj) if header_len is None else header_len
    return struct.pack('<Q', n) + hj + blob + extra


# ---- safetensors
f32 = lambda *v: struct.pack('<%df' % len(v), *v)
out('fuzz_safetensors', 'valid_two', st([('a', 'F32', [2], [0, 8], f32(1, 2)), ('b', 'BF16', [2, 2], [8, 16], b'\x80?' * 4)], {'format': 'pt'}))
out('fuzz_safetensors', 'valid_empty_tensor', st([('z', 'F16', [0, 4], [0, 0], b''), ('i', 'I64', [1], [0, 8], b'\x01' + b'\0' * 7)]))
out('fuzz_safetensors', 'overlap', st([('a', 'F32', [2], [0, 8], f32(1, 2)), ('b', 'F32', [2], [4, 12], f32(3))]))
out('fuzz_safetensors', 'past_end', st([('a', 'F32', [4], [0, 16], f32(1, 2))]))
out('fuzz_safetensors', 'wrong_shape', st([('a', 'F32', [3], [0, 8], f32(1, 2))]))
out('fuzz_safetensors', 'bad_dtype', st([('a', 'F8_E4M3', [2], [0, 2], b'\1\2')]))
out('fuzz_safetensors', 'huge_header', st([('a', 'F32', [1], [0, 4], f32(1))], header_len=1 << 62))
out('fuzz_safetensors', 'truncated', st([('a', 'F32', [2], [0, 8], f32(1, 2))])[:12])
out('fuzz_safetensors', 'int_shape', st([('a', 'I32', [1, 1, 1, 1], [0, 4], b'\0' * 4)], {'k': 'v'}))
out('fuzz_safetensors', 'not_json', struct.pack('<Q', 8) + b'{"a":[1,')

# ---- model folder: [u16 n][config.json][u16 m+1][generation_config.json][model.safetensors]
def model_dir(config, safet, gen=None):
    c = json.dumps(config).encode()
    g = b'' if gen is None else json.dumps(gen).encode()
    m = 0 if gen is None else len(g) + 1
    return struct.pack('<H', len(c)) + c + struct.pack('<H', m) + g + safet

cfg = {'architectures': ['Qwen3ForCausalLM'], 'hidden_size': 8, 'intermediate_size': 16, 'num_hidden_layers': 1,
       'num_attention_heads': 2, 'num_key_value_heads': 1, 'head_dim': 4, 'vocab_size': 4,
       'max_position_embeddings': 64, 'rms_norm_eps': 1e-6, 'rope_theta': 10000.0, 'tie_word_embeddings': True,
       'torch_dtype': 'float32', 'eos_token_id': 3}
H, I, Q, KV, V, D = 8, 16, 8, 4, 4, 4
shapes = {'model.embed_tokens.weight': [V, H], 'model.norm.weight': [H]}
L = 'model.layers.0.'
shapes.update({L + 'input_layernorm.weight': [H], L + 'post_attention_layernorm.weight': [H],
               L + 'self_attn.q_proj.weight': [Q, H], L + 'self_attn.k_proj.weight': [KV, H],
               L + 'self_attn.v_proj.weight': [KV, H], L + 'self_attn.o_proj.weight': [H, Q],
               L + 'self_attn.q_norm.weight': [D], L + 'self_attn.k_norm.weight': [D],
               L + 'mlp.gate_proj.weight': [I, H], L + 'mlp.up_proj.weight': [I, H], L + 'mlp.down_proj.weight': [H, I]})
def weights(dt='F32', size=4, drop=None, reshape=None):
    ts, off = [], 0
    for name in sorted(shapes):
        if name == drop:
            continue
        shape = reshape[1] if reshape and reshape[0] == name else shapes[name]
        n = size
        for s in shape:
            n *= s
        ts.append((name, dt, shape, [off, off + n], bytes((i * 7) % 251 for i in range(n))))
        off += n
    return st(ts, {'format': 'pt'})
out('fuzz_model_dir', 'valid_f32', model_dir(cfg, weights()))
out('fuzz_model_dir', 'valid_bf16_gen', model_dir(dict(cfg, torch_dtype='bfloat16'), weights('BF16', 2), {'eos_token_id': [3, 2], 'temperature': 0.6}))
out('fuzz_model_dir', 'tf5_rope', model_dir(dict({k: v for k, v in cfg.items() if k != 'rope_theta'}, dtype='float32', rope_parameters={'rope_theta': 1e6, 'rope_type': 'default'}), weights()))
out('fuzz_model_dir', 'missing_tensor', model_dir(cfg, weights(drop=L + 'mlp.up_proj.weight')))
out('fuzz_model_dir', 'wrong_shape', model_dir(cfg, weights(reshape=(L + 'self_attn.k_proj.weight', [8, 8]))))
out('fuzz_model_dir', 'dtype_mismatch', model_dir(cfg, weights('F16', 2)))
out('fuzz_model_dir', 'untied_missing_head', model_dir(dict(cfg, tie_word_embeddings=False), weights()))
out('fuzz_model_dir', 'bad_config', model_dir(dict(cfg, hidden_size=-1, num_attention_heads=0, num_key_value_heads=3), weights()))
with open(os.path.join(FIX, 'qwen3-tiny-tied', 'config.json'), 'rb') as f:
    real_cfg = json.load(f)
out('fuzz_model_dir', 'real_config_small_weights', model_dir(dict(real_cfg, dtype='float32'), weights()))

# ---- checkpoint index (the folder holds model-00001-of-00002.safetensors with tensor "a",
# sub/model-00002-of-00002.safetensors with "b", link.safetensors -> a file outside, uplink/ -> ..)
idx = lambda wm: json.dumps({'metadata': {'total_size': 32}, 'weight_map': wm})
out('fuzz_checkpoint_index', 'valid', idx({'a': 'model-00001-of-00002.safetensors', 'b': 'sub/model-00002-of-00002.safetensors'}))
out('fuzz_checkpoint_index', 'dotdot', idx({'a': 'model-00001-of-00002.safetensors', 'secret': '../outside.safetensors'}))
out('fuzz_checkpoint_index', 'symlink', idx({'secret': 'link.safetensors'}))
out('fuzz_checkpoint_index', 'dir_symlink', idx({'secret': 'uplink/outside.safetensors'}))
out('fuzz_checkpoint_index', 'absolute', idx({'a': '/etc/passwd'}))
out('fuzz_checkpoint_index', 'missing_tensor', idx({'zz': 'model-00001-of-00002.safetensors'}))
out('fuzz_checkpoint_index', 'not_object', '{"weight_map": [1, 2]}')
out('fuzz_checkpoint_index', 'dot_segments', idx({'b': './sub/../sub/model-00002-of-00002.safetensors'}))

# ---- tokenizer encode: raw bytes, valid and not
for i, s in enumerate([
        'Hello, world! It\'s 2024.', '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n', '<think>\n\n</think>\n\n',
        '你好，世界。こんにちは 안녕하세요', 'e\u0301 A\u030a \u212b ﬁ', '👨‍👩‍👧‍👦🏳️‍🌈 🇫🇷', '   \t\t\n\n\r\n  x  ', '1234567890 ١٢٣',
        "don't I'LL we've", 'a' * 300, '<|im_start|', '\u0000\u0001\u007f']):
    out('fuzz_tokenizer_encode', 'text%02d' % i, s)
out('fuzz_tokenizer_encode', 'invalid_lead', b'abc\xe4\xbd')
out('fuzz_tokenizer_encode', 'invalid_surrogate', b'\xed\xa0\x80x')
out('fuzz_tokenizer_encode', 'invalid_overlong', b'\xc0\xaf\xf5\xff')

# ---- tokenizer decode: [flags][kind u8][u16 raw][...]
def dec(flags, items):
    b = bytes([flags])
    for kind, raw, extra in items:
        b += bytes([kind]) + struct.pack('>H', raw) + extra
    return b
out('fuzz_tokenizer_decode', 'bytes_cut', dec(0, [(2, 0xE4 - 0x21 + 100, b''), (2, 200, b''), (3, 9707, b'')]))
out('fuzz_tokenizer_decode', 'specials_skip', dec(1, [(1, 35, b''), (1, 36, b''), (3, 500, b''), (1, 70, b'')]))
out('fuzz_tokenizer_decode', 'negative', dec(0, [(0, 0, b'\xff\xff\xff\xff'), (0, 0, b'\x00\x00\x00\x80')]))
out('fuzz_tokenizer_decode', 'mixed', dec(0, [(k, (k * 7919) & 0xffff, b'') for k in range(1, 40)]))

# ---- chat template: [flags][role][content]\0...; role | 0x80 = reasoning after \1
def chat(flags, msgs):
    return bytes([flags]) + b''.join(bytes([r]) + c.encode() + b'\0' for r, c in msgs)
out('fuzz_chat_template', 'simple', chat(1, [(1, 'What is 2+2?')]))
out('fuzz_chat_template', 'system_multi', chat(3, [(0, 'Be brief.'), (1, 'Hi'), (2, 'Hello!'), (1, 'Joke?')]))
out('fuzz_chat_template', 'think_inline', chat(1, [(1, 'Solve'), (2, '<think>\nstep\n</think>\n\nx = 2'), (1, 'More')]))
out('fuzz_chat_template', 'reasoning_field', chat(0, [(1, 'q'), (0x82, 'answer\x01\nreason\n')]))
out('fuzz_chat_template', 'tools', chat(1, [(1, 'call it'), (2, ''), (3, '{"r": 1}'), (3, '{"r": 2}'), (1, '<tool_response>x</tool_response>'), (2, 'done')]))
out('fuzz_chat_template', 'odd_roles', chat(2, [(4, 'dev'), (5, ''), (0, 'late system'), (6, 'USER')]))
out('fuzz_chat_template', 'empty', bytes([1]))

# ---- protocol: request bodies
bodies = [
    {'model': 'm', 'prompt': 'Hello', 'max_tokens': 8, 'temperature': 0, 'seed': 1},
    {'prompt': ['a', 'b'], 'n': 2, 'logprobs': 3, 'echo': True, 'stop': ['\n', 'x'], 'stream': True, 'stream_options': {'include_usage': True}},
    {'prompt': [1, 2, 3], 'top_p': 0.9, 'top_k': 40, 'min_p': 0.05, 'min_tokens': 2, 'ignore_eos': True, 'stop_token_ids': [5]},
    {'prompt': [[1, 2], [3]], 'return_token_ids': True, 'skip_special_tokens': False, 'include_stop_str_in_output': True},
    {'messages': [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'hi'}], 'max_completion_tokens': 4, 'logprobs': True, 'top_logprobs': 2},
    {'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': 'b'}]}], 'chat_template_kwargs': {'enable_thinking': False}},
    {'messages': [{'role': 'assistant', 'content': None, 'reasoning_content': 'r'}], 'add_generation_prompt': False},
    {'prompt': 'x', 'frequency_penalty': 0.5, 'logit_bias': {'1': 2}, 'response_format': {'type': 'json_object'}},
    {'prompt': 'x', 'max_tokens': 1e300, 'temperature': -1, 'n': 1000, 'seed': -5},
    {'tokens': [1, 2, 3]},
    {'prompt': 'hello', 'return_token_strs': True},
    {'messages': [{'role': 'user', 'content': 'x' * 500}], 'stop': 'y' * 300},
]
for i, b in enumerate(bodies):
    out('fuzz_protocol', 'body%02d.json' % i, json.dumps(b))
out('fuzz_protocol', 'not_object.json', '[1,2,3]')
out('fuzz_protocol', 'bad_utf8.json', b'{"prompt": "\xff\xfe"}')
out('fuzz_protocol', 'deep.json', '[' * 2000 + ']' * 2000)
out('fuzz_protocol', 'escapes.json', '{"prompt": "\\ud83d\\ude00 \\ud800 \\u0000"}')

# ---- generation_config.json (server sampling defaults)
for name, g in [('qwen3', {'bos_token_id': 151643, 'do_sample': True, 'eos_token_id': [151645, 151643], 'pad_token_id': 151643,
                           'temperature': 0.6, 'top_k': 20, 'top_p': 0.95, 'transformers_version': '4.51.0'}),
                ('empty', {}), ('ints', {'temperature': 1, 'top_p': 1, 'top_k': -1, 'min_p': 0}),
                ('floats_for_int', {'top_k': 20.5}), ('strings', {'temperature': '0.7', 'top_k': '5'})]:
    out('fuzz_generation_config', name + '.json', json.dumps(g))
out('fuzz_generation_config', 'array.json', '[]')
